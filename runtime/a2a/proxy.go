package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/proxy"
)

// Proxy serves the agents' calls at the gateway. Its zero value, with a
// Gate, serves with the defaults below.
type Proxy struct {
	Gate Gate
	// Transport reaches agents whose target has none.
	Transport http.RoundTripper
	// MaxBodyBytes bounds a call's body (default 32 MiB); BodyReadTimeout
	// bounds its reading (default 60 s).
	MaxBodyBytes    int64
	BodyReadTimeout time.Duration
	// MaxAnswerBytes bounds a whole answer held to be judged (default
	// 4 MiB): a larger one is relayed as it comes, and taken as answered.
	MaxAnswerBytes int
}

// Serve answers one request to agent: prefix is the agent's path at the
// gateway ("/a2a/<agent>"), rest the request's path below it, which is
// sent below the agent's URL. An empty rest is the JSON-RPC endpoint, a
// card path the card, anything else the HTTP+JSON binding.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, agent, prefix, rest string) {
	x := &exchange{p: p, w: w, r: r, agent: agent, gateway: gatewayURL(r, prefix)}
	if rest != "" {
		// Read and sent as cleaned, so the operation the gateway charges
		// is the one an agent that cleans its paths serves.
		rest = path.Clean("/" + rest)
	}
	switch {
	case rest == "" || rest == "/":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, nil, dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
				"the A2A JSON-RPC endpoint takes POST, not %s", r.Method))
			return
		}
		x.jsonrpc()
	case isCardPath(rest):
		x.card(rest)
	default:
		x.call(ReadHTTPJSON(r.Method, rest), rest)
	}
}

// gatewayURL is the agent's URL at the gateway as the client reached it.
func gatewayURL(r *http.Request, prefix string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + prefix
}

// exchange is one request to an agent.
type exchange struct {
	p       *Proxy
	w       http.ResponseWriter
	r       *http.Request
	agent   string
	gateway string
	body    []byte
}

// jsonrpc serves a JSON-RPC call: read, admitted, sent to the agent's URL.
func (x *exchange) jsonrpc() {
	if !x.readBody() {
		return
	}
	c, err := ReadJSONRPC(x.body)
	if err != nil {
		code := rpcInvalidRequest
		if !json.Valid(x.body) {
			code = rpcParseError
		}
		writeRPCError(x.w, nil, code, dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidJSON, "%v", err))
		return
	}
	x.call(c, "")
}

// call admits c and sends it: to the agent's URL (rest "") or to rest
// below it.
func (x *exchange) call(c Call, rest string) {
	if rest != "" && !x.readBody() {
		return
	}
	adm, no := x.p.Gate.Admit(x.r, x.agent, &c)
	if no != nil {
		writeError(x.w, c.ID, no)
		return
	}
	o := x.forward(adm.Target, &c, rest)
	adm.Ticket.Close(o)
}

// readBody reads the client's body whole, with its bound and deadline,
// answering the client itself when it cannot.
func (x *exchange) readBody() bool {
	if x.r.Body == nil || x.r.Body == http.NoBody {
		return true
	}
	rc := http.NewResponseController(x.w)
	_ = rc.SetReadDeadline(time.Now().Add(or(x.p.BodyReadTimeout, time.Minute)))
	defer rc.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, 4<<10)
	err := proxy.ReadBounded(x.r.Body, &buf, or(x.p.MaxBodyBytes, 32<<20))
	switch {
	case errors.Is(err, proxy.ErrTooLarge):
		writeError(x.w, nil, dialect.Errorf(http.StatusRequestEntityTooLarge, dialect.CodeRequestTooLarge,
			"the body exceeds %d bytes", or(x.p.MaxBodyBytes, 32<<20)))
		return false
	case err != nil:
		writeError(x.w, nil, dialect.Errorf(http.StatusRequestTimeout, dialect.CodeRequestTimeout,
			"the body could not be read: %v", err))
		return false
	}
	x.body = buf
	return true
}

// forward sends the call to the agent and relays its answer.
func (x *exchange) forward(t *Target, c *Call, rest string) Outcome {
	resp, err := x.send(t, x.r.Method, upstreamURL(t.URL, rest, x.r.URL.RawQuery), x.body)
	if err != nil {
		return x.failed(c, err)
	}
	defer resp.Body.Close()
	return x.relay(t, c, resp)
}

// send sends one request to the agent: the client's headers that A2A
// defines, never its credential, then the target's own. The timeout
// bounds the wait for the response headers only, not a stream after.
func (x *exchange) send(t *Target, method string, u *url.URL, body []byte) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(x.r.Context())
	var timer *time.Timer
	if t.Timeout > 0 {
		timer = time.AfterFunc(t.Timeout, func() { cancel(errTimeout) })
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bodyReader(body))
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("agent request: %w", err)
	}
	req.ContentLength = int64(len(body))
	copyHeaders(req.Header, x.r.Header, forwardedHeader)
	for k, vs := range t.Header {
		req.Header[k] = vs
	}
	rt := t.Transport
	if rt == nil {
		rt = or(x.p.Transport, http.DefaultTransport)
	}
	resp, err := rt.RoundTrip(req)
	if timer != nil {
		timer.Stop() // a stream's gaps are the task's pace, not a fault
	}
	if err != nil {
		if context.Cause(ctx) == errTimeout {
			err = errTimeout
		}
		cancel(nil)
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

var errTimeout = errors.New("the agent did not answer within its timeout")

// cancelOnClose ends the upstream request's context with its body.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel(nil)
	return err
}

func bodyReader(b []byte) io.Reader {
	if len(b) == 0 {
		return http.NoBody
	}
	return bytes.NewReader(b)
}

// upstreamURL is where a call goes: the agent's URL for JSON-RPC (rest
// ""), else rest below it, with the client's query.
func upstreamURL(agent *url.URL, rest, query string) *url.URL {
	u := *agent
	if rest != "" {
		u.Path, u.RawPath, u.RawQuery = strings.TrimSuffix(agent.Path, "/")+rest, "", query
	}
	return &u
}

// forwardedHeader reports whether a client header goes to the agent: the
// content headers and A2A's own service parameters (both generations'
// spellings of the extensions header), nothing else, so the client's
// credential and hop-by-hop headers stay behind.
func forwardedHeader(k string) bool {
	switch k {
	case "Content-Type", "Accept", "A2a-Version", "A2a-Extensions", "X-A2a-Extensions":
		return true
	}
	return false
}

// relayedHeader reports whether an agent's response header goes to the
// client: its content type and the extensions it activated.
func relayedHeader(k string) bool {
	switch k {
	case "Content-Type", "A2a-Extensions", "X-A2a-Extensions", "A2a-Version", "Cache-Control":
		return true
	}
	return false
}

func copyHeaders(dst, src http.Header, keep func(string) bool) {
	for k, vs := range src {
		if keep(k) {
			dst[k] = vs
		}
	}
}

// failed answers a call the agent could not be reached for.
func (x *exchange) failed(c *Call, err error) Outcome {
	e := dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamUnreachable, "agent %q could not be reached", x.agent)
	if errors.Is(err, errTimeout) {
		e = dialect.Errorf(http.StatusGatewayTimeout, dialect.CodeUpstreamTimeout, "agent %q did not answer in time", x.agent)
	}
	if x.r.Context().Err() != nil {
		return Outcome{Status: 499, Err: fmt.Errorf("client gone before agent %q answered: %w", x.agent, err)}
	}
	writeError(x.w, c.ID, e)
	return Outcome{Status: e.Status, Err: fmt.Errorf("agent %q: %w", x.agent, err)}
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
