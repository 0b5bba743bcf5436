package a2a

import (
	"fmt"
	"net/http"

	"github.com/pistra/pistra/runtime/agentcall"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/jsonrpc"
	"github.com/pistra/pistra/runtime/proxy"
)

// maxCardBytes bounds an agent card, or an answer holding one, read to
// be rewritten.
const maxCardBytes = 1 << 20

// serveCard serves the agent's card with its URLs rewritten to the
// gateway's. It is read below the agent's URL, where a client given that
// URL looks for it; the other card path is tried when the agent has not
// the one asked for. Reading it is free, and passes the access rules and
// the agent's suspension like any call.
func serveCard(c *agentcall.Call, x *agentcall.Exchange, at string) {
	if x.R.Method != http.MethodGet {
		x.W.Header().Set("Allow", http.MethodGet)
		refuse(x, nil, false, dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
			"the card of %s is read with GET, not %s", c, x.R.Method))
		return
	}
	call := Call{Method: "GetAgentCard", Class: ClassCard, Binding: Card}
	if e := c.Admit(nil, call.Method, call.Class.String(), false); e != nil {
		refuse(x, nil, false, e)
		return
	}
	resp, err := c.Send(x.R.Context(), http.MethodGet, at, nil, x.R.Header, &headers, x.RequestID)
	if err == nil && resp.StatusCode == http.StatusNotFound {
		resp.Body.Close()
		resp, err = c.Send(x.R.Context(), http.MethodGet, otherCardPath(at), nil, x.R.Header, &headers, x.RequestID)
	}
	if err != nil {
		unreachable(x, nil, err)
		return
	}
	x.Record.UpstreamStatus = resp.StatusCode
	c.AnsweredAll(resp.StatusCode == http.StatusOK, "upstream_error")
	relayCard(c, x, &call, resp)
}

// relayCard relays an answer holding the agent's card (the card itself,
// or a JSON-RPC answer whose result is the extended card) with its URLs
// rewritten; an answer that holds none (an error, another status) is
// relayed as the agent wrote it. A JSON-RPC answer settles its request.
func relayCard(c *agentcall.Call, x *agentcall.Exchange, call *Call, resp *http.Response) {
	defer resp.Body.Close()
	buf := proxy.GetBuffer()
	defer proxy.PutBuffer(buf)
	if err := proxy.ReadBounded(resp.Body, buf, maxCardBytes); err != nil {
		x.Record.Err = fmt.Errorf("%s: reading its card: %w", c, err)
		refuse(x, nil, false, dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamInvalidResponse,
			"the card of %s could not be read", c))
		return
	}
	out, ok := *buf, resp.StatusCode/100 == 2
	if call.Binding == JSONRPC {
		ok = ok && !rpcFailed(out, call.ID)
		c.Answered(call.ID, ok, "upstream_error")
	}
	if ok {
		rw := Rewriter{Agent: c.Upstream.URL, Gateway: gatewayURL(c, x.R)}
		var err error
		if call.Binding == JSONRPC {
			out, err = rw.ExtendedCard(out)
		} else {
			out, err = rw.Card(out)
		}
		if err != nil {
			x.Record.Err = fmt.Errorf("%s: %w", c, err)
			refuse(x, nil, false, dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamInvalidResponse,
				"the card of %s is not a card: %v", c, err))
			return
		}
	}
	for k, vs := range resp.Header {
		if headers.Relay(k) {
			x.W.Header()[k] = vs
		}
	}
	dialect.WriteJSON(x.W, resp.StatusCode, out)
}

// rpcFailed reports whether a JSON-RPC answer to the request of id is an
// error (or none at all).
func rpcFailed(answer, id []byte) bool {
	failed := true
	jsonrpc.ReadResponses(answer, func(r jsonrpc.Response) {
		if string(r.ID) == string(id) {
			failed = r.Failed
		}
	})
	return failed
}
