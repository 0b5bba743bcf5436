// Package mcp proxies the Model Context Protocol's Streamable HTTP
// transport (revisions 2025-03-26 through 2026-07-28) to an MCP server of
// the policy: POST carries JSON-RPC messages, answered as JSON or as an
// event stream relayed as it comes; GET (a server's stream of its own
// messages) and DELETE (a session's end) pass where the revision has them
// and the server answers them. What it decides is which messages are
// charged calls (tools/call, resources/read, prompts/get requests) and
// that the headers naming a request agree with its body; the gate
// (runtime/agentcall) admits, sends and settles. docs/mcp.md.
package mcp

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/pistra/pistra/runtime/agentcall"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/jsonrpc"
)

// Protocol serves /mcp/{server}.
type Protocol struct{}

var _ agentcall.Protocol = Protocol{}

// headers are the MCP headers that cross the gateway besides the body's
// own: the protocol revision, the session, the request naming headers of
// 2026-07-28 and a stream's resumption point, and what the client reads.
var headers = agentcall.Headers{
	Forward: func(k string) bool {
		switch k {
		case "Accept", "Content-Type", "User-Agent", "Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name",
			"Last-Event-Id":
			return true
		}
		return strings.HasPrefix(k, "Mcp-Param-")
	},
	Relay: func(k string) bool {
		switch k {
		case "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Retry-After", "Allow":
			return true
		}
		return false
	},
}

// Method classes, as the counters label them.
const (
	classTool         = "tool"
	classResource     = "resource"
	classPrompt       = "prompt"
	classOther        = "other"
	classNotification = "notification"
)

// Classify is a method's class and whether a request of it is a charged
// call: the three methods that use a server's tool, resource or prompt.
// Everything else (initialize, the lists, ping, completion, tasks) is the
// protocol's upkeep and free.
func Classify(method string) (class string, charged bool) {
	switch method {
	case "tools/call":
		return classTool, true
	case "resources/read":
		return classResource, true
	case "prompts/get":
		return classPrompt, true
	}
	return classOther, false
}

func (Protocol) Serve(c *agentcall.Call, x *agentcall.Exchange) {
	if x.Path != "" {
		refuse(x, nil, false, dialect.Errorf(http.StatusNotFound, dialect.CodeRouteNotFound,
			"%s has one endpoint, /mcp/%s; %s is not one of its paths", c, c.Service().Name, x.Path))
		return
	}
	switch x.R.Method {
	case http.MethodPost:
		post(c, x)
	case http.MethodGet, http.MethodDelete:
		// No call: a server's own stream, or a session's end.
		if e := c.Suspended(); e != nil {
			refuse(x, nil, false, e)
			return
		}
		forward(c, x, nil, false)
	default:
		x.W.Header().Set("Allow", "GET, POST, DELETE")
		refuse(x, nil, false, dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
			"%s %s is not part of MCP's Streamable HTTP transport; use POST, GET or DELETE", x.R.Method, x.R.URL.Path))
	}
}

// post admits every request of a POST's body and sends it on; one request
// refused refuses the whole body, so no part of it reaches the server.
func post(c *agentcall.Call, x *agentcall.Exchange) {
	msgs, batch, err := jsonrpc.ReadMessages(x.Body, nil)
	if err != nil {
		refuse(x, nil, false, dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidRPC, "%v", err))
		return
	}
	ids := jsonrpc.RequestIDs(msgs)
	e := checkHeaders(x.R.Header, msgs, batch)
	if e == nil && len(ids) == 0 {
		e = c.Suspended() // no request to admit, and still never sent
	}
	if e != nil {
		refuse(x, ids, batch, e)
		return
	}
	for i := range msgs {
		m := &msgs[i]
		if !m.IsRequest() {
			class := classOther
			if m.Method != "" {
				class = classNotification
			}
			c.Forwarded(class)
			continue
		}
		class, charged := Classify(m.Method)
		if e := c.Admit(m.ID, m.Method, class, charged); e != nil {
			c.AnsweredAll(false, "batch_refused")
			refuse(x, ids, batch, e)
			return
		}
	}
	forward(c, x, ids, batch)
}

// forward sends the request on and relays the answer; a server that
// cannot be reached answers its requests' ids with the gateway's error.
func forward(c *agentcall.Call, x *agentcall.Exchange, ids [][]byte, batch bool) {
	resp, err := c.Send(x.R.Context(), x.R.Method, "", x.Body, x.R.Header, &headers, x.RequestID)
	if err != nil {
		x.Record.Err = err
		refuse(x, ids, batch, dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamUnreachable, "%v", err))
		return
	}
	x.Record.UpstreamStatus = resp.StatusCode
	if err := c.Relay(x.W, resp, &headers); err != nil {
		x.Record.Err = err
	}
}

// checkHeaders holds the headers that name a request (2026-07-28's
// Mcp-Method and Mcp-Name) to its body: a gateway or server routing by
// the header must see what the body does. Mcp-Name may be Base64 in the
// =?base64?...?= wrapper.
func checkHeaders(h http.Header, msgs []jsonrpc.Message, batch bool) *dialect.Error {
	method, named := h.Get("Mcp-Method"), h.Get("Mcp-Name")
	if method == "" && named == "" {
		return nil
	}
	if batch {
		return dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidRPC, "Mcp-Method names one request, and the body is a batch")
	}
	m := &msgs[0]
	if method != "" && method != m.Method {
		return dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidRPC,
			"header mismatch: Mcp-Method is %q and the body's method is %q", truncate(method), truncate(m.Method))
	}
	if _, charged := Classify(m.Method); named != "" && charged {
		if name := decodeName(named); name != m.Name {
			return dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidRPC,
				"header mismatch: Mcp-Name is %q and the body names %q", truncate(name), truncate(m.Name))
		}
	}
	return nil
}

func decodeName(v string) string {
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if enc, ok = strings.CutSuffix(enc, "?="); ok {
			if b, err := base64.StdEncoding.DecodeString(enc); err == nil {
				return string(b)
			}
		}
	}
	return v
}

func truncate(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

func refuse(x *agentcall.Exchange, ids [][]byte, batch bool, e *dialect.Error) {
	agentcall.Refuse(x.W, ids, batch, e, x.Record)
}
