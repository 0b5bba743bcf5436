// Package agentcall is the one gate MCP and A2A traffic passes: an
// authenticated caller's request to an MCP server or agent is opened
// (the profile must allow the service), each JSON-RPC request it holds is
// admitted (the access rules, the service's suspension, and for a
// charged call a hold of its cost on every budget bound to the profile's
// agent traffic), the request is sent with the service's credential
// instead of the caller's, and each call is settled by its answer as the
// answer is relayed: charged on a result, given back on an error, on a
// result that asks for more input, or when no answer came at all.
//
// The protocols (runtime/mcp, runtime/a2a) decide which methods are
// charged calls and how their traffic is framed; everything a call costs,
// who may make it and how it is counted and logged is decided here.
package agentcall

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/jsonrpc"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/snapshot"
	"github.com/pistra/pistra/runtime/suspend"
	"github.com/pistra/pistra/runtime/upstream"
)

// Gate admits agent calls. It is safe for concurrent use.
type Gate struct {
	Budgets *budget.Gate
	// Suspensions is nil when nothing can be suspended.
	Suspensions suspend.Store
	Metrics     *metrics.Metrics
	// Transport sends to services without TLS options of their own.
	Transport http.RoundTripper
}

// Caller is who makes a call: a key of the snapshot's policy.
type Caller struct {
	Snap         *snapshot.Snapshot
	Profile, Key int
}

// Open starts a call by caller to the service of kind k named name: a
// policy without it is service_not_found (404), a profile that does not
// allow it service_not_allowed (403). Neither reaches the service.
func (g *Gate) Open(caller Caller, k plan.ServiceKind, name string, rec *record.Record) (*Call, *dialect.Error) {
	gr := caller.Snap.Graph
	rec.Call = &record.Call{Service: name, Key: gr.Keys[caller.Key].Name}
	i := gr.ServiceNamed(k, name)
	if i < 0 {
		return nil, dialect.Errorf(http.StatusNotFound, dialect.CodeServiceNotFound, "the policy declares no %s %q", what(k), name)
	}
	if !gr.Profiles[caller.Profile].Allows(k, i) {
		return nil, dialect.Errorf(http.StatusForbidden, dialect.CodeServiceNotAllowed,
			"the key's profile %q may not reach %s %q", gr.Profiles[caller.Profile].Name, what(k), name)
	}
	c := &Call{gate: g, caller: caller, svc: &gr.Services(k)[i], Upstream: caller.Snap.Service(k, i), rec: rec}
	var names []string
	for _, bi := range gr.Profiles[caller.Profile].AgentBudgets {
		names = append(names, gr.Budgets[bi].Name)
	}
	rec.Call.Budgets = strings.Join(names, ",")
	return c, nil
}

func what(k plan.ServiceKind) string {
	if k == plan.KindAgent {
		return "agent"
	}
	return "MCP server"
}

// Call is one HTTP request of a caller to a service, holding the calls it
// carries until their answers settle them. Not safe for concurrent use:
// one goroutine serves a request.
type Call struct {
	gate   *Gate
	caller Caller
	svc    *plan.Service
	// Upstream is the service resolved for serving.
	Upstream *upstream.Service
	rec      *record.Record
	pending  []pending
}

// pending is a request sent on, waiting for its answer.
type pending struct {
	id     string
	class  string
	ticket admission.Ticket // nil for a request that is not charged
}

// Service is the policy's service the call is to.
func (c *Call) Service() *plan.Service { return c.svc }

// Admit admits one JSON-RPC request of the call, id its raw id: the
// access rules, read with its method; the service's suspension; for a
// charged one (charged: the protocol's decision) a hold of its cost on
// every bound budget. class is its method class, for the counters. A
// refused request is counted and must be answered with the error
// returned (Refuse), never sent.
func (c *Call) Admit(id []byte, method, class string, charged bool) *dialect.Error {
	if c.rec.Call.Method == "" {
		c.rec.Call.Method = method
	}
	if e := cmp.Or(c.rules(method), c.Suspended()); e != nil {
		c.count(class, string(e.Code))
		return e
	}
	p := pending{id: string(id), class: class}
	if charged {
		r := admission.Request{Graph: c.caller.Snap.Graph, Programs: c.caller.Snap.Programs, Profile: c.caller.Profile,
			Key: c.caller.Key, Route: c.svc.Kind.Route()}
		t, no := c.gate.Budgets.AdmitCall(&r, c.svc)
		if no != nil {
			c.count(class, no.Reason)
			return no.Error
		}
		p.ticket = t
	}
	c.pending = append(c.pending, p)
	return nil
}

// Forwarded counts a message that is no request (a notification, a
// client's answer to a server's request): nothing to admit or settle.
func (c *Call) Forwarded(class string) { c.count(class, "forwarded") }

// rules is the refusal of the first access rule, the deployment's then
// the profile's, that denies a call of method; suspended rules deny
// nothing. A rule that fails to evaluate denies: a call the policy
// cannot judge is not made.
func (c *Call) rules(method string) *dialect.Error {
	gr, progs := c.caller.Snap.Graph, c.caller.Snap.Programs
	prof := &gr.Profiles[c.caller.Profile]
	a := expr.Attrs{Route: string(c.svc.Kind.Route()), Profile: prof.Name, Key: gr.Keys[c.caller.Key].Name,
		Service: c.svc.Name, Method: method}
	for _, rules := range [][]plan.Rule{gr.Rules, prof.Rules} {
		for i := range rules {
			r := &rules[i]
			if c.gate.suspended(suspend.KindRule, r.Name) {
				continue
			}
			deny, err := progs.Rule(r.Expr, a)
			if err != nil {
				return dialect.Errorf(http.StatusForbidden, dialect.Code(r.Code), "access rule %q could not be evaluated: %v", r.Name, err)
			}
			if deny {
				return dialect.Errorf(http.StatusForbidden, dialect.Code(r.Code), "%s", cmp.Or(r.Message, "denied by access rule "+r.Name))
			}
		}
	}
	return nil
}

// Suspended is the refusal of a request to a suspended service, nil when
// it is not suspended. Admit asks it of every request; a protocol asks it
// of what carries none (a notification, a stream's GET).
func (c *Call) Suspended() *dialect.Error {
	if c.gate.Suspensions == nil {
		return nil
	}
	s, ok := c.gate.Suspensions.Suspended(suspend.Kind(c.svc.Kind), c.svc.Name)
	if !ok {
		return nil
	}
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeServiceSuspended, "%s %q is suspended: %s",
		what(c.svc.Kind), c.svc.Name, cmp.Or(s.Reason, "no reason given"))
	e.Final = true
	return e
}

func (g *Gate) suspended(k suspend.Kind, name string) bool {
	if g.Suspensions == nil {
		return false
	}
	_, ok := g.Suspensions.Suspended(k, name)
	return ok
}

// Answered settles the request whose raw id is id: charged when ok, its
// hold given back otherwise (an error answer, a result asking for more
// input: the request re-sent with that input is a call of its own). An
// id no pending request has (a second event of a stream already settled)
// changes nothing. outcome labels the count when not ok.
func (c *Call) Answered(id []byte, ok bool, outcome string) {
	for i := range c.pending {
		if c.pending[i].id == string(id) {
			c.settle(i, ok, outcome)
			return
		}
	}
}

// AnsweredAll settles every pending request alike: for a binding whose
// answers carry no id (A2A's HTTP+JSON), one answer per request.
func (c *Call) AnsweredAll(ok bool, outcome string) {
	for len(c.pending) > 0 {
		c.settle(len(c.pending)-1, ok, outcome)
	}
}

// settle closes pending request i and forgets it.
func (c *Call) settle(i int, ok bool, outcome string) {
	p := c.pending[i]
	c.pending = append(c.pending[:i], c.pending[i+1:]...)
	switch {
	case ok && p.ticket != nil:
		p.ticket.Settle(&admission.Outcome{Status: http.StatusOK})
		c.charged()
		outcome = "charged"
	case ok:
		outcome = "free"
	case p.ticket != nil:
		p.ticket.Release()
	}
	c.count(p.class, outcome)
}

// charged adds one charged call to the record: its cost on each bound
// budget.
func (c *Call) charged() {
	gr := c.caller.Snap.Graph
	c.rec.Call.Calls++
	for _, bi := range gr.Profiles[c.caller.Profile].AgentBudgets {
		c.rec.Call.Charge += c.svc.CostOf(&gr.Budgets[bi])
	}
}

// End gives back the hold of every request no answer settled (the
// service was never reached, or its answer broke off before it): a call
// is charged only for an answer relayed.
func (c *Call) End() {
	c.AnsweredAll(false, "unanswered")
}

func (c *Call) count(class, outcome string) {
	c.gate.Metrics.Call(string(c.svc.Kind), c.svc.Name, class, outcome)
}

// Refuse answers the requests of ids (raw, nil for null; a batch answers
// an array) with the gateway's refusal e as JSON-RPC errors, carrying its
// pistra code, status and retry hint in error.data. A refusal of
// requests the caller may overcome by waiting (429, 5xx: a budget, a
// suspension, a ledger down) is sent with HTTP 200: MCP clients treat
// those statuses as transport trouble and drop their bodies, so the error
// would never reach the application. The others keep their status, as
// does one that answers no request.
func Refuse(w http.ResponseWriter, ids [][]byte, batch bool, e *dialect.Error, rec *record.Record) {
	status := e.Status
	if len(ids) > 0 && (status == http.StatusTooManyRequests || status >= 500) {
		status = http.StatusOK
	}
	rec.Refused(e)
	rec.Status = status
	jsonrpc.WriteError(w, status, ids, batch, e)
}

// String names the call for errors: "MCP server \"search\"".
func (c *Call) String() string { return fmt.Sprintf("%s %q", what(c.svc.Kind), c.svc.Name) }

// Exchange is one HTTP request of an opened call, as the server hands it
// to the protocol.
type Exchange struct {
	W http.ResponseWriter
	R *http.Request
	// Path is what follows /mcp/{name} or /a2a/{name}: "" for the
	// service's endpoint itself.
	Path string
	// Body is the request's body, read whole within the server's bound;
	// nil when it sent none.
	Body      []byte
	RequestID string
	Record    *record.Record
}

// Protocol serves one request of an opened call: it classifies what the
// request carries, admits its calls through c, and sends and relays it
// through c (Send, Relay) or answers it with a refusal (Refuse). The
// server closes c (End) once Serve returns.
type Protocol interface {
	Serve(c *Call, x *Exchange)
}
