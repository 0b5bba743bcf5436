package a2a

import (
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/pistra/pistra/runtime/agentcall"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/jsonrpc"
)

// Protocol serves /a2a/{agent}: an empty path is the agent's JSON-RPC
// endpoint, a card path its card, any other path the HTTP+JSON binding,
// each sent below the agent's URL.
type Protocol struct{}

var _ agentcall.Protocol = Protocol{}

// headers are the A2A headers that cross the gateway: what the content
// is, A2A's service parameters (both generations' spellings of the
// extensions header), and on the way back the extensions an agent
// activated. The client's credential never crosses (the gate's rule).
var headers = agentcall.Headers{
	Forward: func(k string) bool {
		switch k {
		case "Content-Type", "Accept", "User-Agent", "A2a-Version", "A2a-Extensions", "X-A2a-Extensions":
			return true
		}
		return false
	},
	Relay: func(k string) bool {
		switch k {
		case "Content-Type", "Cache-Control", "Retry-After", "A2a-Version", "A2a-Extensions", "X-A2a-Extensions":
			return true
		}
		return false
	},
}

// Classify is a JSON-RPC method's class and whether a request of it is a
// charged call, in either generation's spelling: what preflight answers
// for agent traffic.
func (Protocol) Classify(name string) (class string, charged bool) {
	o := method(name)
	return o.class.String(), o.class.Charged()
}

func (Protocol) Serve(c *agentcall.Call, x *agentcall.Exchange) {
	rest := x.Path
	if rest != "" {
		// Read and sent as cleaned, so the operation charged is the one an
		// agent that cleans its paths serves.
		rest = path.Clean(rest)
	}
	switch {
	case rest == "" || rest == "/":
		if x.R.Method != http.MethodPost {
			x.W.Header().Set("Allow", http.MethodPost)
			refuse(x, nil, false, dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
				"%s takes JSON-RPC requests by POST, not %s", c, x.R.Method))
			return
		}
		serveJSONRPC(c, x)
	case isCardPath(rest):
		serveCard(c, x, rest)
	default:
		serveHTTPJSON(c, x, rest)
	}
}

// serveJSONRPC admits the one request of a JSON-RPC body, sends it to the
// agent's URL and relays the answer, which settles it by its id.
func serveJSONRPC(c *agentcall.Call, x *agentcall.Exchange) {
	call, err := ReadJSONRPC(x.Body)
	if err != nil {
		refuse(x, nil, false, dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidRPC, "%v", err))
		return
	}
	ids := [][]byte{call.ID}
	if e := c.Admit(call.ID, call.Method, call.Class.String(), call.Class.Charged()); e != nil {
		refuse(x, ids, false, e)
		return
	}
	resp, err := c.Send(x.R.Context(), http.MethodPost, "", x.Body, x.R.Header, &headers, x.RequestID)
	if err != nil {
		unreachable(x, ids, err)
		return
	}
	x.Record.UpstreamStatus = resp.StatusCode
	if call.Class == ClassCard {
		relayCard(c, x, &call, resp)
		return
	}
	if err := c.Relay(x.W, resp, &headers); err != nil {
		x.Record.Err = err
		if isEventStream(resp.Header) {
			endStream(x, call.ID, err)
		}
	}
}

// serveHTTPJSON admits an HTTP+JSON binding request and sends it below
// the agent's URL. Its answers carry no JSON-RPC id: the status says
// whether the agent answered (2xx, charged) or refused (given back).
func serveHTTPJSON(c *agentcall.Call, x *agentcall.Exchange, rest string) {
	call := ReadHTTPJSON(x.R.Method, rest)
	if e := c.Admit(nil, call.Method, call.Class.String(), call.Class.Charged()); e != nil {
		refuse(x, nil, false, e)
		return
	}
	if q := x.R.URL.RawQuery; q != "" {
		rest += "?" + q
	}
	resp, err := c.Send(x.R.Context(), x.R.Method, rest, x.Body, x.R.Header, &headers, x.RequestID)
	if err != nil {
		unreachable(x, nil, err)
		return
	}
	x.Record.UpstreamStatus = resp.StatusCode
	c.AnsweredAll(resp.StatusCode/100 == 2, "upstream_error")
	if call.Class == ClassCard {
		relayCard(c, x, &call, resp)
		return
	}
	if err := c.Relay(x.W, resp, &headers); err != nil {
		x.Record.Err = err
	}
}

// unreachable answers the call's requests when the agent could not be
// reached (its hold is given back when the call ends).
func unreachable(x *agentcall.Exchange, ids [][]byte, err error) {
	x.Record.Err = err
	refuse(x, ids, false, dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamUnreachable, "%v", err))
}

// endStream ends a JSON-RPC stream that broke with an error event under
// the request's id, which the SDKs raise, so a short stream is not taken
// for a whole one. The blank lines first end whatever event the break
// cut short; a client already gone is not written to at all.
func endStream(x *agentcall.Exchange, id []byte, err error) {
	if x.R.Context().Err() != nil {
		return
	}
	e := dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamStreamIncomplete, "%v", err)
	ev := jsonrpc.AppendError(append(make([]byte, 0, 256), "\n\ndata: "...), id, e)
	ev = append(ev, "\n\n"...)
	if _, werr := x.W.Write(ev); werr == nil {
		_ = http.NewResponseController(x.W).Flush()
	}
}

func refuse(x *agentcall.Exchange, ids [][]byte, batch bool, e *dialect.Error) {
	agentcall.Refuse(x.W, ids, batch, e, x.Record)
}

// gatewayURL is the agent's URL at the gateway as the client reached it.
func gatewayURL(c *agentcall.Call, r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/a2a/%s", scheme, r.Host, c.Service().Name)
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && strings.EqualFold(mt, "text/event-stream")
}
