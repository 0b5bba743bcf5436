package server

import (
	"net/http"

	"github.com/pistra/pistra/runtime/agentcall"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// callPreflight is the answer of a preflight for agent traffic: whether
// the caller may make a call of method to the service, and what a
// charged one costs on each budget bound to its agent traffic.
type callPreflight struct {
	Route   string           `json:"route"`
	Service string           `json:"service"`
	Method  string           `json:"method"`
	Class   string           `json:"class"`
	Charged bool             `json:"charged"`
	Costs   []agentcall.Cost `json:"costs"`
}

// preflightCall answers POST /v1/preflight?route=mcp|a2a&service=<name>&
// method=<method> for the caller's key: the refusal a call would get
// before any budget (the key, the profile's list, the access rules, a
// suspension), else what the call would be charged.
func (s *Server) preflightCall(w http.ResponseWriter, r *http.Request, k plan.ServiceKind) {
	x := s.newExchange(w, r, routePreflight, plan.DialectOpenAI)
	defer s.recoverPanic(x)
	if e := s.answerPreflightCall(x, k); e != nil {
		agentcall.Refuse(&x.w, nil, false, e, &x.rec)
	}
	s.end(x)
}

func (s *Server) answerPreflightCall(x *exchange, k plan.ServiceKind) *dialect.Error {
	q := x.r.URL.Query()
	name, method := q.Get("service"), q.Get("method")
	if e := s.authenticate(x, true); e != nil {
		return e
	}
	c, e := s.calls.Open(agentcall.Caller{Snap: x.snap, Profile: x.profile, Key: x.key}, k, name, &x.rec)
	if e != nil {
		return e
	}
	a := callPreflight{Route: string(k.Route()), Service: name, Method: method, Class: "other", Costs: c.Costs()}
	if cl, ok := s.protocols[k].(agentcall.Classifier); ok {
		a.Class, a.Charged = cl.Classify(method)
	}
	if e := c.Check(method); e != nil {
		return e
	}
	return writePreflight(x, a)
}
