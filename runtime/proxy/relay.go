package proxy

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
)

// relayedHeader reports whether an upstream response header goes to the
// client: the ones the SDKs act on (request id, retry hints, rate-limit
// state, processing time), the content type, and the content encoding
// (bodies pass through undecoded, so an encoding an upstream applied
// unasked must travel with them). Everything else, hop-by-hop headers
// included, stays behind.
func relayedHeader(k string) bool {
	switch k {
	case "Content-Type", "Content-Encoding", "X-Request-Id", "Request-Id", "Retry-After", "Retry-After-Ms",
		"X-Should-Retry", "Openai-Processing-Ms":
		return true
	}
	return strings.HasPrefix(k, "X-Ratelimit-") || strings.HasPrefix(k, "Anthropic-Ratelimit-")
}

// relay sends the attempt's answer to the client: status and headers,
// then the body through the pump, and records how it ended (end). The
// body goes whole when inspect read it whole, or as it arrives, flushed
// after every read when it is an event stream. A translated candidate's
// answer goes through the translator instead (translated_relay.go).
func (p *Proxy) relay(x *Exchange, a *attempt, res *record.Record) {
	res.Served, res.Provider, res.UpstreamStatus = a.cand, a.up.Name, a.resp.StatusCode
	defer a.finish()
	x.Body.Sent() // this answer is the request's last
	if a.cand.Translate != plan.TranslateNone {
		p.relayTranslated(x, a)
		return
	}
	src, body, flush := passthrough(x, a)
	p.deliver(x, a, a.resp.StatusCode, src, body, flush)
}

// passthrough sets the client's headers for an answer relayed as it is,
// and returns its source, the body left to read (nil: none) and whether
// each write is flushed. Its own function, so that its frame is gone from
// the stack before the answer is relayed.
func passthrough(x *Exchange, a *attempt) (source, io.Reader, bool) {
	resp := a.resp
	h := relayHeaders(x, a)
	switch {
	case a.stream != nil:
		return a.stream, resp.Body, true
	case a.whole:
		h["Content-Length"] = []string{strconv.Itoa(len(*a.head))}
		x.pass = passSource{head: *a.head, read: passthroughUsage(a.usage)}
		return &x.pass, nil, false
	}
	// Not held: an upstream error answer, or a body too large to hold.
	if resp.ContentLength >= 0 {
		h["Content-Length"] = []string{strconv.FormatInt(resp.ContentLength, 10)}
	}
	x.pass = passSource{}
	if a.head != nil {
		x.pass.head = *a.head // what inspect read of it
	}
	return &x.pass, resp.Body, isEventStream(resp.Header)
}

// deliver sends status, then src through the pump (body what is left to
// read of the answer, nil when nothing is), and ends the relay.
func (p *Proxy) deliver(x *Exchange, a *attempt, status int, src source, body io.Reader, flush bool) {
	x.Record.Status, x.Record.Sent, x.Record.Streamed = status, time.Now(), flush
	x.W.WriteHeader(status)
	e := &x.ending
	*e = ending{}
	pump(x.W, flush, src, body, e)
	src.seen(&e.seen)
	p.end(x, a.up.Name, e)
	a.served = x.Record
}

// relayHeaders sets the client response's headers from the upstream's:
// the relayed ones, a request id, and what served the request. It returns
// the client's header map for the caller to finish.
func relayHeaders(x *Exchange, a *attempt) http.Header {
	h := x.W.Header()
	for k, vs := range a.resp.Header {
		if relayedHeader(k) {
			h[k] = vs
		}
	}
	// The id the upstream gave its answer is what the provider's support
	// asks for; the client gets it, or the gateway's own when there is none.
	idKey := x.Dialect.RequestIDHeader()
	switch id := h.Get(idKey); id {
	case "":
		h[idKey] = x.requestIDValue() // idKey is canonical
	case x.RequestID: // echoed back: not the upstream's own
	default:
		x.Record.UpstreamRequestID = id
	}
	x.Record.SetServedHeaders(h, a.up.NameHeader, a.up.ModelHeader(a.cand.Model))
	return h
}

// isEventStream reports whether the answer is declared an event stream.
func isEventStream(h http.Header) bool {
	return strings.EqualFold(mediaType(h.Get("Content-Type")), "text/event-stream")
}
