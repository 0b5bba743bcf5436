package server

import (
	"net/http"
	"strings"

	"github.com/pistra/pistra/runtime/agentcall"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/jsonrpc"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
)

// servicePrefixes are the public paths of agent traffic, by kind: an MCP
// server at /mcp/{name}, an A2A agent at /a2a/{name} and below.
var servicePrefixes = []struct {
	prefix string
	kind   plan.ServiceKind
}{{"/mcp/", plan.KindMCPServer}, {"/a2a/", plan.KindAgent}}

// cutService splits /mcp/{name}[/rest] and /a2a/{name}[/rest]; rest keeps
// its leading slash.
func cutService(path string) (k plan.ServiceKind, name, rest string, ok bool) {
	for _, p := range servicePrefixes {
		if after, found := strings.CutPrefix(path, p.prefix); found {
			name, rest, _ = strings.Cut(after, "/")
			if rest != "" || strings.HasSuffix(after, "/") {
				rest = "/" + rest
			}
			return p.kind, name, rest, name != ""
		}
	}
	return "", "", "", false
}

// serveCall serves one request to an MCP server or agent: the caller's key
// is authenticated as for inference, the gate opens the call (the
// profile must allow the service), the body is read within the same
// bounds, and the kind's protocol admits, sends and relays it. Every
// refusal is a JSON-RPC error, so the SDKs surface it.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, k plan.ServiceKind, name, rest string) {
	x := s.newExchange(w, r, string(k.Route()), plan.DialectOpenAI)
	defer s.recoverPanic(x)
	raw := proxy.GetBuffer()
	defer proxy.PutBuffer(raw)
	if e := s.call(x, k, name, rest, raw); e != nil {
		// The body is read first so that a refusal answers its requests
		// by id: a client matches an error to its request by the id, and
		// the MCP SDKs surface no error they cannot match.
		msgs, batch, _ := jsonrpc.ReadMessages(*raw, nil)
		agentcall.Refuse(&x.w, jsonrpc.RequestIDs(msgs), batch, e, &x.rec)
	}
	s.end(x)
}

// call reads the body into raw and runs the call, or returns why it may
// not be made.
func (s *Server) call(x *exchange, k plan.ServiceKind, name, rest string, raw *[]byte) *dialect.Error {
	if x.r.Method == http.MethodPost {
		if e := checkContentType(x.r); e != nil {
			return e
		}
		if e := s.readBodyWithin(x, x.r, raw); e != nil {
			return e
		}
	}
	p := s.protocols[k]
	if p == nil {
		return dialect.Errorf(http.StatusNotFound, dialect.CodeRouteNotFound, "this gateway serves no %s traffic", k)
	}
	if e := s.checkLedger(); e != nil {
		return e
	}
	if e := s.authenticate(x, true); e != nil {
		return e
	}
	c, e := s.calls.Open(agentcall.Caller{Snap: x.snap, Profile: x.profile, Key: x.key}, k, name, &x.rec)
	if e != nil {
		return e
	}
	x.rec.Provider = name
	ax := agentcall.Exchange{W: &x.w, R: x.r, Path: rest, RequestID: x.rec.ID, Record: &x.rec}
	if x.r.Method == http.MethodPost {
		ax.Body = *raw
	}
	defer c.End()
	p.Serve(c, &ax)
	return nil
}
