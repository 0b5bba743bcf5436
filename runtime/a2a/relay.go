package a2a

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/sse"
)

// relay sends the agent's answer to the client and says how the call
// ended. Nothing reaches the client before the answer is known to be one
// (a whole body read, or a stream's first event): a call whose answer
// breaks before that is given back and answered 502.
func (x *exchange) relay(t *Target, c *Call, resp *http.Response) Outcome {
	switch {
	case resp.StatusCode/100 != 2:
		// The agent refused the call: relayed as it said it, not charged.
		o := x.pass(resp, nil, false, c)
		o.Answered = false
		return o
	case isEventStream(resp.Header):
		return x.stream(c, resp)
	}
	return x.whole(t, c, resp)
}

// whole relays an answer read whole first: judged (an error is not
// charged) and, for the extended card, rewritten.
func (x *exchange) whole(t *Target, c *Call, resp *http.Response) Outcome {
	buf := make([]byte, 0, 4<<10)
	err := proxy.ReadBounded(resp.Body, &buf, int64(or(x.p.MaxAnswerBytes, 4<<20)))
	switch {
	case errors.Is(err, proxy.ErrTooLarge):
		return x.pass(resp, buf, false, c) // too large to hold, and no error is that large
	case err != nil:
		return x.broke(c, err)
	}
	answered := !isError(buf)
	if answered && c.Class == ClassCard {
		rw := Rewriter{Agent: t.URL, Gateway: x.gateway}
		if c.Binding == JSONRPC {
			buf, err = rw.ExtendedCard(buf)
		} else {
			buf, err = rw.Card(buf)
		}
		if err != nil {
			return x.broke(c, err)
		}
	}
	h := x.w.Header()
	copyHeaders(h, resp.Header, relayedHeader)
	h.Set("Content-Length", strconv.Itoa(len(buf)))
	x.w.WriteHeader(resp.StatusCode)
	o := Outcome{Status: resp.StatusCode, Answered: answered}
	if _, err := x.w.Write(buf); err != nil {
		o.Status, o.Err = StatusClientClosed, fmt.Errorf("client write: %w", err)
	}
	return o
}

// StatusClientClosed is the status recorded for a client that left
// before its answer was whole.
const StatusClientClosed = 499

// stream relays an event stream as it comes, once its first event has
// come and said whether the call was answered or refused.
func (x *exchange) stream(c *Call, resp *http.Response) Outcome {
	held, first, err := readFirst(resp.Body)
	if err != nil {
		return x.broke(c, err)
	}
	o := x.pass(resp, held, true, c)
	o.Answered = o.Answered && !first.err
	return o
}

// pass relays the answer's status and headers, then head and the rest of
// the body as they come. An answer that breaks mid-way is ended, for a
// JSON-RPC stream, with an error event the SDKs raise, so a short stream
// is never taken for a whole one.
func (x *exchange) pass(resp *http.Response, head []byte, flush bool, c *Call) Outcome {
	h := x.w.Header()
	copyHeaders(h, resp.Header, relayedHeader)
	if head == nil && resp.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	x.w.WriteHeader(resp.StatusCode)
	e := proxy.Pass(x.w, flush, head, resp.Body)
	o := Outcome{Status: resp.StatusCode, Answered: true}
	switch {
	case e.Wrote != nil:
		o.Status, o.Err = StatusClientClosed, fmt.Errorf("client write: %w", e.Wrote)
	case e.Read != nil && x.r.Context().Err() != nil:
		o.Status, o.Err = StatusClientClosed, fmt.Errorf("client gone mid-answer: %w", e.Read)
	case e.Read != nil:
		o.Err = fmt.Errorf("answer from agent %q broke: %w", x.agent, e.Read)
		if flush && c.Binding == JSONRPC {
			x.writeStreamError(c, dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamStreamIncomplete,
				"the stream from agent %q broke: %v", x.agent, e.Read))
		}
	}
	return o
}

// writeStreamError ends a stream with a JSON-RPC error event.
func (x *exchange) writeStreamError(c *Call, e *dialect.Error) {
	ev := appendError(append(make([]byte, 0, 256), "data: "...), c.ID, rpcGatewayError, e)
	ev = append(ev[:len(ev)-1], "\n\n"...)
	_, _ = x.w.Write(ev)
	if f, ok := x.w.(http.Flusher); ok {
		f.Flush()
	}
}

// broke answers a call whose answer could not be read before it began.
func (x *exchange) broke(c *Call, err error) Outcome {
	if x.r.Context().Err() != nil {
		return Outcome{Status: StatusClientClosed, Err: fmt.Errorf("client gone before agent %q answered: %w", x.agent, err)}
	}
	e := dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamInvalidResponse,
		"the answer from agent %q could not be read", x.agent)
	writeError(x.w, c.ID, e)
	return Outcome{Status: e.Status, Err: fmt.Errorf("answer from agent %q: %w", x.agent, err)}
}

// first is what a stream's first event said.
type first struct{ got, err bool }

func (f *first) Event(data []byte) error {
	if !f.got {
		f.got, f.err = true, isError(data)
	}
	return nil
}

var errNoFirstEvent = errors.New("the stream ended before its first event")

// readFirst reads body until its first event is complete and returns the
// bytes read, which the client is then sent first.
func readFirst(body io.Reader) ([]byte, first, error) {
	var r sse.Reader
	var f first
	held := make([]byte, 0, 4<<10)
	for !f.got {
		if len(held) == cap(held) {
			held = append(held, 0)[:len(held)]
		}
		n, err := body.Read(held[len(held):cap(held)])
		if ferr := r.Feed(held[len(held):len(held)+n], &f); ferr != nil {
			return nil, f, ferr
		}
		held = held[:len(held)+n]
		switch {
		case f.got:
		case err == io.EOF:
			return nil, f, errNoFirstEvent
		case err != nil:
			return nil, f, err
		case len(held) > sse.MaxEventBytes:
			return nil, f, sse.ErrEventTooLarge
		}
	}
	return held, f, nil
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}
