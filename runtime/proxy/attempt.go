package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/pistra/pistra/runtime/h1"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/tracing"
	"github.com/pistra/pistra/runtime/upstream"
	"github.com/pistra/pistra/runtime/watchdog"
)

// attempt is one upstream request and what came of it.
type attempt struct {
	up    *upstream.Upstream
	cand  *plan.Candidate
	class class
	// resp is set whenever the upstream answered, failed or not; its body
	// is open until discard or relay.
	resp *http.Response
	err  error
	// cut ends the attempt early: its provider's timeout (errTimeout), its
	// client leaving, or its end (finish).
	cut h1.Cut
	// dog enforces the provider's timeout, when it has one: on the wait
	// for the response head, then through timed on every read of the body.
	// Both live in the attempt so a timed attempt allocates no more.
	dog   watchdog.Watchdog
	timed gapTimedBody
	// broken is set when the upstream answered but its answer could not be
	// used (a body that broke, a stream that opened with an error).
	broken bool
	// askedUsage: the body asked the stream for usage on the client's
	// behalf, so the usage-only chunk is removed on the way out.
	askedUsage bool
	// What inspect read before the attempt was taken as good: head holds
	// the body read so far (all of it when whole), usage what a whole
	// answer reported; stream is an event stream's relay state.
	head   *[]byte
	whole  bool
	usage  meter.Usage
	stream *streamRelay
	// What the attempt's metrics and span are told when it ends (told):
	// when it was sent and for which route, how long its first event took
	// (streams), and the record of the answer it served, nil until then.
	start      time.Time
	route      plan.Route
	firstChunk time.Duration
	served     *record.Record
	metrics    *metrics.Metrics
	span       tracing.Attempt
	told       bool
}

// errTimeout is the cancel cause of an attempt that ran out of time.
var errTimeout = errors.New("upstream timeout")

// send makes one attempt on candidate c. The provider's timeout bounds the
// wait for the response status and headers, then every gap between reads
// of the body: a stream may run as long as it keeps sending, but an
// upstream that goes quiet mid-answer is cut rather than waited on forever.
func (p *Proxy) send(x *Exchange, c *plan.Candidate, up *upstream.Upstream, m *member, retry bool) *attempt {
	a := &attempt{up: up, cand: c, start: time.Now(), route: x.Route, metrics: p.Metrics}
	if up.Timeout > 0 {
		a.dog.Start(up.Timeout, a)
		a.dog.Begin()
	}
	a.askedUsage = x.asksUsage(c, up)
	ch := up.Channel(c)
	req := newRequest(x, ch, m.url(x, c, up), x.Body.forCandidate(c, a.askedUsage))
	if c.Translate != plan.TranslateNone {
		fitTranslatedHeaders(req.Header, &x.Body.xlat)
	}
	if x.Trace != nil {
		a.span = x.Trace.Attempt(req.Header, x.attemptStart(a, req, retry))
	}
	rt := p.Transport
	if up.Transport != nil {
		rt = up.Transport // the provider's own TLS (client certificate, CA)
	}
	resp, err := roundTrip(x.Client.Context(), rt, req, &a.cut)
	if up.Timeout > 0 {
		a.dog.End()
		if a.timedOut() {
			// Whatever came back is already cancelled.
			if resp != nil {
				resp.Body.Close()
			}
			resp, err = nil, errTimeout
		}
	}
	switch {
	case x.Client.Context().Err() != nil:
		a.class, a.err = classCanceled, context.Cause(x.Client.Context())
		if resp != nil {
			resp.Body.Close()
		}
	case err != nil:
		a.class, a.err = classConnect, err
		if errors.Is(err, errTimeout) || a.timedOut() {
			a.class = classTimeout
		}
	default:
		if up.Timeout > 0 {
			resp.Body = a.timeBody(resp.Body)
		}
		a.resp, a.class = resp, classify(resp.StatusCode)
		if a.class != classNone {
			a.err = errors.New(resp.Status)
		} else {
			p.inspect(x, a)
		}
	}
	return a
}

// Expire is the watchdog's: the attempt is cut with errTimeout.
func (a *attempt) Expire() { a.cut.Fire(errTimeout) }

// timedOut reports whether the provider's timeout ended the attempt.
func (a *attempt) timedOut() bool { return errors.Is(a.cut.Cause(), errTimeout) }

// gapTimedBody bounds each read of an upstream body by the provider's
// timeout. Only the time a read waits counts, so a slow client never counts
// against the upstream.
type gapTimedBody struct {
	io.ReadCloser
	a *attempt
}

// timeBody puts body's reads under the attempt's watchdog.
func (a *attempt) timeBody(body io.ReadCloser) *gapTimedBody {
	a.timed = gapTimedBody{ReadCloser: body, a: a}
	return &a.timed
}

func (b *gapTimedBody) Read(p []byte) (int, error) {
	b.a.dog.Begin()
	n, err := b.ReadCloser.Read(p)
	b.a.dog.End()
	if err != nil && err != io.EOF && b.a.timedOut() {
		err = fmt.Errorf("no body bytes for %v: %w", b.a.up.Timeout, errTimeout)
	}
	return n, err
}

// WaitReady waits for the next read's bytes, as a read would: under the
// watchdog.
func (b *gapTimedBody) WaitReady() {
	if w, ok := b.ReadCloser.(readyWaiter); ok {
		b.a.dog.Begin()
		w.WaitReady()
		b.a.dog.End()
	}
}

// discard drops a failed attempt: its body is drained a little so the
// connection can go back to the pool, then closed.
func (a *attempt) discard() {
	if a.resp != nil {
		_, _ = io.CopyN(io.Discard, a.resp.Body, 64<<10)
	}
	a.finish()
}

// dropAnswer closes the upstream's answer, which will not be relayed.
func (a *attempt) dropAnswer() {
	if a.resp != nil {
		a.broken = true
		a.resp.Body.Close()
		a.resp = nil
	}
	a.releaseRead()
}

// finish closes the attempt's body, stops its cut (and so the watch of
// its client), releases its buffers, and tells its metrics and span how
// it went.
func (a *attempt) finish() {
	a.tell()
	if a.resp != nil {
		a.resp.Body.Close()
		a.resp = nil
	}
	a.releaseRead()
	if a.up != nil && a.up.Timeout > 0 {
		a.dog.Stop() // every attempt ends here, whether or not it got a body
	}
	a.cut.Stop()
}

func (a *attempt) releaseRead() {
	if a.head != nil {
		PutBuffer(a.head)
		a.head = nil
	}
	if a.stream != nil {
		putStream(a.stream)
		a.stream = nil
	}
}

// upstreamSaysNoRetry honours x-should-retry: false, which the providers
// send when a retry cannot succeed.
func (a *attempt) upstreamSaysNoRetry() bool {
	return a.resp != nil && a.resp.Header.Get("X-Should-Retry") == "false"
}

// retryAfter is the wait a's upstream asked for, if it asked.
func (a *attempt) retryAfter() (time.Duration, bool) {
	if a.resp == nil {
		return 0, false
	}
	return retryAfter(a.resp.Header, time.Now())
}

// retryAfter reads retry-after-ms (milliseconds, fractional allowed), then
// retry-after (seconds or an HTTP date), as the SDKs do.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}
