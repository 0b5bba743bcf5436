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
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/route"
	"github.com/pistra/pistra/runtime/snapshot"
	"github.com/pistra/pistra/runtime/tracing"
	"github.com/pistra/pistra/runtime/watchdog"
)

// exchange is the per-request state of an inference or models request,
// pooled so a request allocates little of its own.
type exchange struct {
	w       trackingWriter
	r       *http.Request
	dialect dialect.Writer
	snap    *snapshot.Snapshot
	profile int // -1 until the key is known
	key     int // index into Graph.Keys; -1 until the key is known
	body    proxy.Body
	// maxOutput is the output limit the body states, 0 when none.
	maxOutput uint64
	caps      caps.Reader
	order     []int
	keyRules  route.Rules // the key's access rules, with their buffers
	decision  route.Decision
	px        proxy.Exchange
	// rec is what the request was, for the headers, the log and the
	// metrics alike.
	rec record.Record
	// inference is set on an inference route's request, which the GenAI
	// metrics count; trace is its span, nil when not traced.
	inference bool
	trace     *tracing.Request
	// bodyRead is the request body's read, under its watchdog.
	bodyRead bodyRead
}

func (s *Server) newExchange(w http.ResponseWriter, r *http.Request, route string, d plan.Dialect) *exchange {
	x := s.exchanges.Get().(*exchange)
	order, kr := x.order[:0], x.keyRules
	kr.Reset(nil, nil, "") // keep the buffers, not the last request's snapshot
	// Zeroed in place, then set: a literal with fields would be built on
	// the stack and copied, two kilobytes of both per request.
	*x = exchange{}
	x.r, x.profile, x.key, x.order, x.keyRules = r, -1, -1, order, kr
	x.rec.Start, x.rec.ID, x.rec.Route = time.Now(), requestIDOf(r), route
	x.w.reset(w, s.opts.ClientWriteTimeout)
	x.dialect = writerFor(d)
	w.Header()[record.HeaderRequestID] = []string{x.rec.ID}
	return x
}

// release recycles x. An exchange abandoned by a panic is not recycled: its
// state is unknown.
func (s *Server) release(x *exchange) {
	x.body.Release()
	x.caps = caps.Reader{} // drop the reference to the recycled body
	x.px, x.rec, x.snap, x.r, x.trace = proxy.Exchange{}, record.Record{}, nil, nil, nil
	x.decision = route.Decision{} // it points into the snapshot's graph
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
	x.rec.Refused(e)
	if e == errClientLeft {
		// No one to answer: cut, or Go's server would answer an empty 200.
		x.rec.Err, x.rec.Cut = e, true
		return
	}
	x.rec.SetOriginHeader(x.w.Header())
	x.dialect.WriteError(&x.w, x.rec.ID, e)
}

// finish logs and counts the request from its record.
func (s *Server) finish(x *exchange) {
	now := time.Now()
	d := now.Sub(x.rec.Start)
	if x.rec.Status == 0 {
		x.rec.Status = x.w.status
	}
	s.metrics.Request(x.rec.Route, x.rec.ProviderLabel(), x.rec.Status, d)
	if x.rec.Code != "" && x.rec.Attempts == 0 {
		s.metrics.Refused(string(x.rec.Code))
	}
	s.countTokens(&x.rec)
	if x.inference {
		s.observeInference(x, now, d)
	}
	if s.requests != nil {
		s.requests.LogRequest(x.rec.Level(), &x.rec, d)
		return
	}
	var attrs [24]slog.Attr
	s.log.LogAttrs(x.r.Context(), x.rec.Level(), "request", x.rec.Attrs(attrs[:0], d)...)
}

// requestLogger is a log handler that writes a request's line from its
// record, sparing slog's per-attribute work.
type requestLogger interface {
	LogRequest(level slog.Level, r *record.Record, d time.Duration)
}

// cutConnection aborts the client's connection, so that a client that
// was sent a status sees an error rather than a clean end: net/http's way
// is a panic with http.ErrAbortHandler, which its server recovers from
// without logging. It is how a record's Cut is applied (end), and how a
// panic after the status went out ends (recoverPanic, which lets this one
// pass through).
func cutConnection() { panic(http.ErrAbortHandler) }

// recoverPanic is the last line of defence: a panic in a handler is
// counted, logged with its stack, and answered with a 500 when nothing has
// been sent yet; otherwise the connection is cut so the client sees an
// error. The deliberate cut (cutConnection) passes through.
func (s *Server) recoverPanic(x *exchange) {
	rec := recover()
	if rec == nil {
		return
	}
	if rec == http.ErrAbortHandler {
		panic(rec)
	}
	// The exchange is not recycled, but its watchdogs must not stay
	// watched: stopped once the answer below is out.
	defer func() {
		x.bodyRead.end()
		x.w.reset(nil, 0)
	}()
	s.metrics.Panic()
	s.log.Error("handler panic", "request_id", x.rec.ID, "route", x.rec.Route, "panic", rec, "stack", string(debug.Stack()))
	if x.w.status != 0 {
		cutConnection()
	}
	s.refuse(x, dialect.Errorf(http.StatusInternalServerError, dialect.CodeInternal,
		"internal error; request id %s", x.rec.ID))
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
	// stall is the watchdog, started (watched) on the first Flush; wd is
	// the connection it cuts.
	stall   watchdog.Watchdog
	watched bool
	wd      writeDeadliner
}

// writeDeadliner is what net/http's response writer offers to bound writes
// to its connection.
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// aLongTimeAgo is a deadline that has passed: setting it fails a blocked
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (t *trackingWriter) reset(w http.ResponseWriter, stallLimit time.Duration) {
	if t.watched {
		t.stall.Stop()
	}
	t.w, t.status, t.stallLimit, t.watched, t.wd = w, 0, stallLimit, false, nil
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
	if !t.watched {
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
	if !t.watched && t.stallLimit > 0 {
		if wd, ok := t.w.(writeDeadliner); ok {
			t.wd, t.watched = wd, true
			t.stall.Start(t.stallLimit, t)
		}
	}
	if t.watched {
		t.stall.Begin()
		defer t.stall.End()
	}
	t.flusher.Flush()
}

// Expire is the stall watchdog's: a write or flush blocked for the whole
// limit fails at once.
func (t *trackingWriter) Expire() { t.wd.SetWriteDeadline(aLongTimeAgo) }

// Unwrap lets http.ResponseController reach the connection.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.w }
