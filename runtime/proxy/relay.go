package proxy

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/pistra/pistra/runtime/meter"
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

// copyPool holds relay buffers: one per response in flight, none per chunk.
var copyPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// relay sends the attempt's response to the client: status and headers
// first, then the body: whole when inspect read it whole, or as it arrives,
// flushed after every read when it is an event stream. A translated
// candidate's answer goes through the translator instead
// (translated_relay.go).
func (p *Proxy) relay(x *Exchange, a *attempt, res *record.Record) {
	res.Served, res.Provider, res.UpstreamStatus = a.cand, a.up.Name, a.resp.StatusCode
	if a.cand.Translate != plan.TranslateNone {
		p.relayTranslated(x, a, res)
		return
	}
	defer a.finish()
	resp := a.resp
	h := relayHeaders(x, a)
	res.Status = resp.StatusCode
	switch {
	case a.whole:
		h["Content-Length"] = []string{strconv.Itoa(len(*a.head))}
		x.W.WriteHeader(resp.StatusCode)
		if _, err := x.W.Write(*a.head); err != nil {
			res.Status, res.Err = record.StatusClientClosed, fmt.Errorf("client write: %w", err)
		}
		if a.usage.Reported {
			res.Usage, res.UsageFrom = a.usage, meter.SourcePassthrough
		}
	case a.stream != nil:
		x.W.WriteHeader(resp.StatusCode)
		p.relayStream(x, a, res)
	default: // not held: an upstream error answer, or a body too large to hold
		if resp.ContentLength >= 0 {
			h["Content-Length"] = []string{strconv.FormatInt(resp.ContentLength, 10)}
		}
		x.W.WriteHeader(resp.StatusCode)
		p.relayUnheld(x, a, res)
	}
}

// relayUnheld copies a body inspect did not hold, after what it read of
// it, if anything.
func (p *Proxy) relayUnheld(x *Exchange, a *attempt, res *record.Record) {
	if read := a.takeRead(); len(read) > 0 {
		if _, err := x.W.Write(read); err != nil {
			res.Status, res.Err = record.StatusClientClosed, fmt.Errorf("client write: %w", err)
			return
		}
	}
	upErr, clientErr := copyBody(x.W, a.resp.Body, isEventStream(a.resp.Header))
	switch {
	case clientErr != nil:
		res.Status, res.Err = record.StatusClientClosed, fmt.Errorf("client write: %w", clientErr)
	case upErr != nil && x.Client.Context().Err() != nil:
		// The client left and the upstream read was cancelled for it: the
		// upstream did not break. Cut all the same, so a client that only
		// half-closed does not take the short body for a whole one.
		res.Status, res.Cut = record.StatusClientClosed, true
		res.Err = fmt.Errorf("client gone mid-body: %w", context.Cause(x.Client.Context()))
	case upErr != nil:
		res.Cut, res.Err = true, fmt.Errorf("upstream body from %q broke: %w", a.up.Name, upErr)
	}
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
		h.Set(idKey, x.RequestID)
	case x.RequestID: // echoed back: not the upstream's own
	default:
		x.Record.UpstreamRequestID = id
	}
	x.Record.SetServedHeaders(h, a.up.NameHeader, a.up.ModelHeader(a.cand.Model))
	return h
}

// copyBody copies body to w through a pooled buffer, flushing after each
// read when flush is set. It tells an upstream read failure from a client
// write failure, since only the first means the client got a broken answer.
func copyBody(w http.ResponseWriter, body io.Reader, flush bool) (upErr, clientErr error) {
	buf := copyPool.Get().(*[32 << 10]byte)
	defer copyPool.Put(buf)
	flusher, _ := w.(http.Flusher)
	if flusher == nil {
		flush = false
	}
	for {
		n, rerr := body.Read(buf[:])
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil, werr
			}
			if flush {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			return nil, nil
		}
		if rerr != nil {
			return rerr, nil
		}
	}
}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}
