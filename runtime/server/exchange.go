package server

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/dialect/anthropic"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/watchdog"
)

// exchange is the per-request state of an inference or models request,
// pooled so a request allocates little of its own.
type exchange struct {
	start     time.Time
	w         trackingWriter
	r         *http.Request
	route     string
	dialect   dialect.Writer
	requestID string
	snap      *Snapshot
	profile   int // -1 until the key is known
	key       int // index into Graph.Keys; -1 for an admin acting on a key's behalf
	model     string
	body      proxy.Body
	caps      caps.Reader
	order     []int
	// origin is the capability claim the routing decision acted on: the
	// served candidate's, or every candidate's when fidelity refused.
	origin string
	// lost is what a lossy-allowed request was served without.
	lost plan.CapSet
	// onBehalf names the key an admin preflight asked for.
	onBehalf string
	px       proxy.Exchange
	res      proxy.Result
}

func (s *Server) newExchange(w http.ResponseWriter, r *http.Request, route string, d plan.Dialect) *exchange {
	x := s.exchanges.Get().(*exchange)
	order := x.order[:0]
	*x = exchange{start: time.Now(), r: r, route: route, profile: -1, key: -1, order: order}
	x.w.reset(w, s.opts.ClientWriteTimeout)
	x.dialect = writerFor(d)
	x.requestID = requestIDOf(r)
	w.Header()[headerRequestID] = []string{x.requestID}
	return x
}

// release recycles x. An exchange abandoned by a panic is not recycled: its
// state is unknown.
func (s *Server) release(x *exchange) {
	x.body.Release()
	x.caps = caps.Reader{} // drop the reference to the recycled body
	x.px, x.res, x.snap, x.r = proxy.Exchange{}, proxy.Result{}, nil, nil
	x.w.reset(nil, 0)
	s.exchanges.Put(x)
}

var (
	openaiWriter    dialect.Writer = openai.Dialect{}
	anthropicWriter dialect.Writer = anthropic.Dialect{}
)

func writerFor(d plan.Dialect) dialect.Writer {
	if d == plan.DialectAnthropic {
		return anthropicWriter
	}
	return openaiWriter
}

// refuse answers x with a gateway error in the caller's dialect.
// A refusal that routing reached names the claims it acted on, as a served
// answer does.
func (s *Server) refuse(x *exchange, e *dialect.Error) {
	x.res.Status, x.res.Code = e.Status, e.Code
	if x.origin != "" {
		x.w.Header().Set(proxy.HeaderChannelOrigin, x.origin)
	}
	x.dialect.WriteError(&x.w, x.requestID, e)
}

// headerRequestID carries the gateway's request id on every answer,
// whatever the dialect's own request-id header holds.
const headerRequestID = "Pistra-Request-Id"

// maxLoggedModel bounds the requested model in a log line: the name is the
// client's, and a megabyte of it must not become a megabyte of log.
const maxLoggedModel = 256

// finish logs and counts the request. It never logs a credential or a body.
func (s *Server) finish(x *exchange) {
	d := time.Since(x.start)
	provider := x.res.Provider
	if provider == "" {
		provider = metrics.NoProvider
	}
	status := x.res.Status
	if status == 0 {
		status = x.w.status
	}
	s.metrics.Request(x.route, provider, status, d)
	attrs := []slog.Attr{
		slog.String("request_id", x.requestID),
		slog.String("route", x.route),
		slog.String("model", truncate(x.model, maxLoggedModel)),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.String("provider", provider),
	}
	if x.profile >= 0 {
		attrs = append(attrs, slog.String("profile", x.snap.Graph.Profiles[x.profile].Name))
	}
	if x.onBehalf != "" {
		attrs = append(attrs, slog.String("on_behalf_of", x.onBehalf))
	}
	if c := x.res.Served; c != nil {
		attrs = append(attrs, slog.String("upstream_model", c.Model))
	}
	if x.origin != "" {
		attrs = append(attrs, slog.String("pistra.channel_origin", x.origin))
	}
	if x.lost != 0 {
		attrs = append(attrs, slog.Any("lost", x.lost))
	}
	if x.res.Attempts > 0 {
		attrs = append(attrs, slog.Int("attempts", x.res.Attempts))
	}
	// The id the upstream gave its answer, relayed to the client, is what
	// the provider's support asks for.
	if x.res.Served != nil {
		if id := x.w.Header().Get(x.dialect.RequestIDHeader()); id != "" && id != x.requestID {
			attrs = append(attrs, slog.String("upstream_request_id", truncate(id, 128)))
		}
	}
	if x.res.UsageFrom != meter.SourceNone {
		u := &x.res.Usage
		attrs = append(attrs, slog.String("usage_from", x.res.UsageFrom.String()),
			slog.Uint64("input_tokens", u.InputTokens), slog.Uint64("output_tokens", u.OutputTokens))
	}
	if x.res.Code != "" {
		attrs = append(attrs, slog.String("code", string(x.res.Code)))
	}
	level := slog.LevelInfo
	if x.res.Err != nil {
		attrs = append(attrs, slog.String("error", x.res.Err.Error()))
		if x.res.Cut {
			level = slog.LevelWarn
		}
	}
	s.log.LogAttrs(x.r.Context(), level, "request", attrs...)
}

// recoverPanic is the last line of defence: a panic in a handler is
// counted, logged with its stack, and answered with a 500 when nothing has
// been sent yet; otherwise the connection is cut so the client sees an
// error. http.ErrAbortHandler is the deliberate cut and passes through.
func (s *Server) recoverPanic(x *exchange) {
	rec := recover()
	if rec == nil {
		return
	}
	if rec == http.ErrAbortHandler {
		panic(rec)
	}
	s.metrics.Panic()
	s.log.Error("handler panic", "request_id", x.requestID, "route", x.route, "panic", rec, "stack", string(debug.Stack()))
	if x.w.status != 0 {
		panic(http.ErrAbortHandler)
	}
	s.refuse(x, dialect.Errorf(http.StatusInternalServerError, dialect.CodeInternal,
		"internal error; request id %s", x.requestID))
}

// requestIDOf takes the client's request id when it is a plausible one and
// mints one otherwise; it is sent upstream, logged and returned.
func requestIDOf(r *http.Request) string {
	for _, k := range [...]string{"X-Request-Id", "Request-Id"} {
		if v := r.Header[k]; len(v) == 1 && plausibleID(v[0]) {
			return v[0]
		}
	}
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	var out [4 + 2*len(b)]byte
	copy(out[:], "req_")
	hex.Encode(out[4:], b[:])
	return string(out[:])
}

// plausibleID keeps client ids short and printable, so they are safe in
// logs and headers.
func plausibleID(v string) bool {
	if len(v) == 0 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// trackingWriter remembers whether the response has started, so a late
// failure knows whether it can still answer with a status. Once a response
// streams (its first Flush), a watchdog bounds each write and flush: a
// client that stops reading would otherwise hold the handler and its
// upstream stream for ever, since nothing else reads or times out.
type trackingWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	status  int
	// stallLimit is how long one write or flush may block; 0 for none.
	stallLimit time.Duration
	stall      *watchdog.Watchdog
}

// writeDeadliner is what net/http's response writer offers to bound writes
// to its connection.
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// aLongTimeAgo is a deadline that has passed: setting it fails a blocked
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (t *trackingWriter) reset(w http.ResponseWriter, stallLimit time.Duration) {
	if t.stall != nil {
		t.stall.Stop()
	}
	t.w, t.status, t.stallLimit, t.stall = w, 0, stallLimit, nil
	t.flusher, _ = w.(http.Flusher)
}

func (t *trackingWriter) Header() http.Header { return t.w.Header() }

func (t *trackingWriter) WriteHeader(code int) {
	if t.status == 0 {
		t.status = code
	}
	t.w.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	if t.stall == nil {
		return t.w.Write(b)
	}
	t.stall.Begin()
	n, err := t.w.Write(b)
	t.stall.End()
	return n, err
}

// Flush passes flushes through so streams reach the client per event.
func (t *trackingWriter) Flush() {
	if t.flusher == nil {
		return
	}
	if t.stall == nil && t.stallLimit > 0 {
		if wd, ok := t.w.(writeDeadliner); ok {
			t.stall = watchdog.New(t.stallLimit, func() { wd.SetWriteDeadline(aLongTimeAgo) })
		}
	}
	if t.stall != nil {
		t.stall.Begin()
		defer t.stall.End()
	}
	t.flusher.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.w }
