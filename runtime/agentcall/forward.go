package agentcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/jsonrpc"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/sse"
)

// Headers says which headers of a protocol cross the gateway, by their
// canonical names: Forward of the client's request, Relay of the
// service's answer. The client's credentials never cross, whatever
// Forward says: the service gets its own.
type Headers struct {
	Forward func(name string) bool
	Relay   func(name string) bool
}

// credentialHeaders are the client's, never forwarded.
var credentialHeaders = map[string]bool{"Authorization": true, "X-Api-Key": true, "Api-Key": true, "Cookie": true,
	"Proxy-Authorization": true}

// MaxAnswerBytes bounds an answer that is not a stream, read whole to
// settle its calls before it is relayed.
const MaxAnswerBytes = 32 << 20

// Send sends the call's request to the service: method, the service's URL
// with path appended ("" for the endpoint itself; what follows a "?" in
// it is the query), body (nil for none),
// the client's headers that h forwards, the service's static headers over
// them and its credential last. The answer's headers are awaited within
// the service's timeout; the answer's body must be closed.
func (c *Call) Send(ctx context.Context, method, path string, body []byte, client http.Header, h *Headers, requestID string) (*http.Response, error) {
	up := c.Upstream
	u := *up.URL
	if path != "" {
		// A path below the URL (A2A's card, its HTTP+JSON routes) may
		// carry the client's query.
		path, u.RawQuery, _ = strings.Cut(path, "?")
		u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/")+path, ""
	}
	hdr := make(http.Header, 8)
	for k, vs := range client {
		if h.Forward(k) && !credentialHeaders[k] {
			hdr[k] = vs
		}
	}
	for _, kv := range up.StaticHeaders() {
		hdr[kv.Name] = []string{kv.Value}
	}
	hdr["X-Request-Id"] = []string{requestID}
	if k, v := up.Credential(); k != "" {
		hdr[k] = v
	}
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: building the request: %w", c, err)
	}
	req.Header = hdr
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	rt := up.Transport
	if rt == nil {
		rt = c.gate.Transport
	}
	var timer *time.Timer
	if up.Timeout > 0 {
		timer = time.AfterFunc(up.Timeout, cancel)
	}
	resp, err := rt.RoundTrip(req)
	if timer != nil && !timer.Stop() && err != nil {
		err = fmt.Errorf("no answer within %s: %w", up.Timeout, err)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

// cancelOnClose ends a request's context once its answer's body is
// closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Relay sends the service's answer resp to the client and settles each
// request as its answer passes: an event stream as it arrives, flushed
// after every read, its events read for answers as they complete; any
// other answer read whole (up to MaxAnswerBytes) and its answers settled
// before it is written. A request is charged only for a result relayed;
// one the answer never reached is left for End to release.
func (c *Call) Relay(w http.ResponseWriter, resp *http.Response, h *Headers) error {
	defer resp.Body.Close()
	out := w.Header()
	for k, vs := range resp.Header {
		if h.Relay(k) {
			out[k] = vs
		}
	}
	ok := resp.StatusCode/100 == 2
	if isEventStream(resp.Header) {
		w.WriteHeader(resp.StatusCode)
		return c.relayStream(w, resp.Body, ok)
	}
	buf := proxy.GetBuffer()
	defer proxy.PutBuffer(buf)
	err := proxy.ReadBounded(resp.Body, buf, MaxAnswerBytes)
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", c, err)
	}
	c.settleAnswers(*buf, ok)
	out["Content-Length"] = []string{strconv.Itoa(len(*buf))}
	w.WriteHeader(resp.StatusCode)
	if _, err := w.Write(*buf); err != nil {
		return fmt.Errorf("writing to the client: %w", err)
	}
	return nil
}

// relayStream relays an event stream read by read.
func (c *Call) relayStream(w http.ResponseWriter, body io.Reader, ok bool) error {
	flusher, _ := w.(http.Flusher)
	buf := proxy.GetBuffer()
	defer proxy.PutBuffer(buf)
	chunk := (*buf)[:cap(*buf)]
	if len(chunk) < 4096 {
		chunk = make([]byte, 32<<10)
	}
	events := streamAnswers{c: c, ok: ok}
	for {
		n, err := body.Read(chunk)
		if n > 0 {
			if _, werr := w.Write(chunk[:n]); werr != nil {
				return fmt.Errorf("writing to the client: %w", werr)
			}
			if flusher != nil {
				flusher.Flush()
			}
			if ferr := events.r.Feed(chunk[:n], &events); ferr != nil {
				return fmt.Errorf("%s: reading its stream: %w", c, ferr)
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return events.r.Finish(&events)
		case err != nil:
			return fmt.Errorf("%s: its stream broke: %w", c, err)
		}
	}
}

// streamAnswers settles the requests answered in a stream's events.
type streamAnswers struct {
	c  *Call
	ok bool
	r  sse.Reader
}

func (s *streamAnswers) Event(data []byte) error {
	s.c.settleAnswers(data, s.ok)
	return nil
}

// settleAnswers settles the request of every answer in data; ok is false
// for an answer that came with an error status.
func (c *Call) settleAnswers(data []byte, ok bool) {
	jsonrpc.ReadResponses(data, func(r jsonrpc.Response) {
		switch {
		case r.InputRequired:
			c.Answered(r.ID, false, "input_required")
		default:
			c.Answered(r.ID, ok && !r.Failed, "upstream_error")
		}
	})
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}
