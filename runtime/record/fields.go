package record

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/pistra/pistra/runtime/jsonquote"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// maxLoggedModel bounds the requested model in a log line: the name is the
// client's, and a megabyte of it must not become a megabyte of log.
const maxLoggedModel = 256

// Attrs appends the request log line's fields to attrs, for a logger
// other than JSONHandler. It never logs a credential or a body.
func (r *Record) Attrs(attrs []slog.Attr, d time.Duration) []slog.Attr {
	f := fields{attrs: attrs}
	r.walk(&f, d)
	return f.attrs
}

// appendJSON appends the same fields as JSON object members, each led by
// a comma, as slog's JSON handler writes them.
func (r *Record) appendJSON(b []byte, d time.Duration) []byte {
	f := fields{json: true, b: b}
	r.walk(&f, d)
	return f.b
}

// walk hands the log line's fields to f, in the line's order; the one
// list both encodings read, so that they cannot drift apart.
func (r *Record) walk(f *fields, d time.Duration) {
	f.str("request_id", r.ID)
	f.str("route", r.Route)
	f.str("model", truncate(r.Model, maxLoggedModel))
	f.int("status", r.Status)
	f.millis("duration_ms", d)
	f.str("provider", r.ProviderLabel())
	f.optStr("endpoint", r.Endpoint)
	f.optStr("profile", r.Profile)
	f.optStr("on_behalf_of", r.OnBehalfOf)
	if r.Served != nil {
		f.str("upstream_model", r.Served.Model)
	}
	f.optStr("pistra.channel_origin", r.Origin)
	if r.Lost != 0 {
		f.caps("lost", r.Lost)
	}
	if r.Attempts > 0 {
		f.int("attempts", r.Attempts)
	}
	f.optStr("upstream_request_id", truncate(r.UpstreamRequestID, 128))
	if r.UsageFrom != meter.SourceNone {
		u := &r.Usage
		f.str("usage_from", r.UsageFrom.String())
		f.uint("input_tokens", u.InputTokens)
		f.uint("output_tokens", u.OutputTokens)
		f.optUint("cached_input_tokens", u.CachedInputTokens)
		f.optUint("cache_creation_input_tokens", u.CacheCreationInputTokens)
		f.optUint("reasoning_tokens", u.ReasoningTokens)
	}
	if c := r.Call; c != nil {
		f.str("service", c.Service)
		f.optStr("key", c.Key)
		f.optStr("method", truncate(c.Method, maxLoggedModel))
		f.int("calls", c.Calls)
		f.optStr("budgets", c.Budgets)
		f.uint("charge", c.Charge)
	}
	f.optStr("code", string(r.Code))
	if r.Err != nil {
		f.str("error", r.Err.Error())
	}
}

// fields collects the line's fields as slog attributes or, when json is
// set, as JSON bytes. One concrete type rather than an interface keeps a
// caller's attribute array on its stack.
type fields struct {
	json  bool
	b     []byte
	attrs []slog.Attr
}

// key starts a JSON member; every key of the line is plain ASCII.
func (f *fields) key(k string) {
	f.b = append(f.b, ',', '"')
	f.b = append(f.b, k...)
	f.b = append(f.b, '"', ':')
}

func (f *fields) str(k, v string) {
	if !f.json {
		f.attrs = append(f.attrs, slog.String(k, v))
		return
	}
	f.key(k)
	f.b = jsonquote.Append(f.b, v)
}

func (f *fields) optStr(k, v string) {
	if v != "" {
		f.str(k, v)
	}
}

func (f *fields) int(k string, n int) {
	if !f.json {
		f.attrs = append(f.attrs, slog.Int(k, n))
		return
	}
	f.key(k)
	f.b = strconv.AppendInt(f.b, int64(n), 10)
}

func (f *fields) uint(k string, n uint64) {
	if !f.json {
		f.attrs = append(f.attrs, slog.Uint64(k, n))
		return
	}
	f.key(k)
	f.b = strconv.AppendUint(f.b, n, 10)
}

func (f *fields) optUint(k string, n uint64) {
	if n != 0 {
		f.uint(k, n)
	}
}

// millis is d in milliseconds to the microsecond. A multiple of 0.001
// below 1e21 is a number encoding/json (which slog's handler formats
// floats with) writes in 'f' form, shortest: the same bytes as here.
func (f *fields) millis(k string, d time.Duration) {
	ms := float64(d.Microseconds()) / 1000
	if !f.json {
		f.attrs = append(f.attrs, slog.Float64(k, ms))
		return
	}
	f.key(k)
	f.b = appendMillis(f.b, d.Microseconds())
}

// appendMillis writes us microseconds as milliseconds, the way
// strconv.AppendFloat(b, float64(us)/1000, 'f', -1, 64) does (at most three
// decimals, trailing zeros dropped), without the shortest-float search that
// was a request line's dearest field.
func appendMillis(b []byte, us int64) []byte {
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	return append(append(b, '.'), digits[:n]...)
}

// caps is a set of capabilities, as its MarshalJSON writes it: rare (only
// lossy-allowed requests lose any), so its allocation does not matter.
func (f *fields) caps(k string, s plan.CapSet) {
	if !f.json {
		f.attrs = append(f.attrs, slog.Any(k, s))
		return
	}
	f.key(k)
	j, _ := s.MarshalJSON() // a list of names: cannot fail
	f.b = append(f.b, j...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..." + strconv.Itoa(len(s)-n) + " more bytes"
}
