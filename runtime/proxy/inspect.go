package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/upstream"
)

// Nothing of an answer reaches the client until the attempt is known good.
// inspect reads what that takes: a non-stream answer whole (up to the
// proxy's bound), metered and checked to be one JSON document; a stream up
// to its first event, which must not be an error. Whatever fails here is a
// failed attempt, retried and failed over like a connect failure or a 5xx,
// since the client has been sent nothing yet.
//
// An answer the gateway cannot read is relayed as it comes, unchecked: one
// an upstream compressed unasked (bodies pass through undecoded).
func (p *Proxy) inspect(x *Exchange, a *attempt) {
	if !identityEncoded(a.resp.Header) {
		return
	}
	if isEventStream(a.resp.Header) && a.resp.StatusCode/100 == 2 {
		p.inspectStream(x, a)
		return
	}
	buf := GetBuffer()
	err := ReadBounded(a.resp.Body, buf, int64(p.maxAnswer()))
	switch {
	case errors.Is(err, ErrTooLarge):
		a.head = buf // relayed as it comes, unchecked: too large to hold
		return
	case err != nil:
		PutBuffer(buf)
		a.failRead(x, fmt.Errorf("answer body from %q broke: %w", a.up.Name, err))
		return
	}
	a.head, a.whole = buf, true
	if a.resp.StatusCode/100 != 2 || len(*buf) == 0 || !isJSON(a.resp.Header) {
		return // an error answer, an empty one, or not JSON: relayed as it is, unmetered
	}
	u, err := meter.ReadAnswer(meter.ShapeOf(a.cand.Translate.Upstream(x.Route)), *buf)
	if err != nil {
		a.fail(classConnect, fmt.Errorf("answer from %q is not a JSON document: %w", a.up.Name, err))
		return
	}
	a.usage = u
}

// inspectStream reads a stream up to its first event. The provider's
// timeout bounds that wait as a whole, not only each silence: an upstream
// that sends keepalives but no event would otherwise hold the client
// without even a status. An opening error event that blames the request
// is the answer, relayed as sent; any other is a failed attempt.
func (p *Proxy) inspectStream(x *Exchange, a *attempt) {
	strip := a.askedUsage
	a.stream = getStream(meter.ShapeOf(a.cand.Translate.Upstream(x.Route)), strip)
	body, timed := a.resp.Body, a.up.Timeout > 0
	if timed {
		// One wait from here to the first event, not one per read: the
		// reads go past the timed body's own bound.
		body = a.timed.ReadCloser
		a.dog.Begin()
	}
	first, err := a.stream.readFirst(body)
	if timed {
		a.dog.End()
		if a.timedOut() { // a read it cut, or it fired as the event came
			err = fmt.Errorf("no first event within %v: %w", a.up.Timeout, errTimeout)
		}
	}
	switch {
	case err != nil:
		a.failRead(x, fmt.Errorf("stream from %q: %w", a.up.Name, err))
	case first&meter.Error != 0 && !a.stream.meter.ClientFault():
		a.fail(class5xx, fmt.Errorf("stream from %q opened with an error event: %w", a.up.Name, a.stream.meter.UpstreamError()))
	default:
		a.firstChunk = time.Since(a.start)
	}
}

// failRead fails a on a body read error: the provider's timeout, the
// client leaving, or a broken connection.
func (a *attempt) failRead(x *Exchange, err error) {
	switch {
	case x.Client.Context().Err() != nil:
		a.fail(classCanceled, context.Cause(x.Client.Context()))
	case errors.Is(err, errTimeout):
		a.fail(classTimeout, err)
	default:
		a.fail(classConnect, err)
	}
}

// fail marks a failed with class c. The upstream's answer is gone: what
// the client would get is the gateway's own error.
func (a *attempt) fail(c class, err error) {
	a.class, a.err = c, err
	a.dropAnswer()
}

// asksUsage reports whether the gateway asks candidate c's stream for
// usage on the client's behalf: a same-dialect chat or completions stream
// whose client did not ask, to a provider whose stream_usage is on.
// Responses streams report usage unasked, and reject the member.
func (x *Exchange) asksUsage(c *plan.Candidate, up *upstream.Upstream) bool {
	if c.Translate != plan.TranslateNone || (x.Route != plan.RouteChatCompletions && x.Route != plan.RouteCompletions) {
		return false
	}
	return up.StreamUsage() && x.Body.CanAskUsage()
}

// identityEncoded reports whether the body is sent as it is, with no
// content coding.
func identityEncoded(h http.Header) bool {
	ce := h.Get("Content-Encoding")
	return ce == "" || strings.EqualFold(ce, "identity")
}

// isJSON reports whether the body is declared JSON (application/json, or
// a +json type): the only kind a usage can be read from or checked whole.
func isJSON(h http.Header) bool {
	mt := mediaType(h.Get("Content-Type"))
	const suffix = "+json"
	return strings.EqualFold(mt, "application/json") ||
		len(mt) > len(suffix) && strings.EqualFold(mt[len(mt)-len(suffix):], suffix)
}

// mediaType is a Content-Type's media type, its parameters cut off, in
// the case it came in. An answer's media type is all that decides how it
// is read, and mime.ParseMediaType's map of parameters would be one more
// allocation per answer ("text/event-stream; charset=utf-8" is what
// OpenAI and Anthropic send).
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(mt)
}
