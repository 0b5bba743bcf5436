// Package admission is the seam between the attempt loop and whatever may
// hold a candidate back at the last moment: a budget with no room, a
// suspended provider, an open circuit. The attempt loop asks a Gate just
// before it first sends each candidate, and closes what the gate opened
// once the request is over, exactly once, whatever happened.
//
// The gate decides per candidate, not per request, because what a
// candidate costs depends on who serves it: a budget hold is priced with
// that candidate's own model and provider, and moves with the request on
// failover.
package admission

import (
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// Gate admits candidates. It is safe for concurrent use.
type Gate interface {
	// Admit is asked just before candidate c of request r is first sent
	// (its retries ride the same admission). It returns the claim taken for
	// c, or why c may not be sent: the attempt loop then passes c over
	// untried, counts the refusal by its reason, and answers with the
	// refusal only if no later candidate serves.
	Admit(r *Request, c *plan.Candidate) (Ticket, *Refusal)
}

// Request is what a gate knows of the request a candidate would serve:
// the policy it is served under and who sent what. It carries the graph,
// not the serving snapshot, so that a gate never depends on what else a
// snapshot holds: what a gate keeps per reload (a provider's breaker, a
// pool's members) it keeps itself, indexed by the graph, and the gate can
// live with its domain.
type Request struct {
	// Graph is the policy the request is served under; Programs are its
	// CEL programs.
	Graph    *plan.Graph
	Programs *expr.Programs
	// Profile indexes its Graph.Profiles, Key its Graph.Keys.
	Profile, Key int
	Route        plan.Route
	// Body is the client's body as it arrived; a gate reads it, never
	// keeps it.
	Body []byte
	// MaxOutput is the output limit the body states, 0 when none.
	MaxOutput uint64
}

// Refusal is a gate's reason not to send a candidate.
type Refusal struct {
	// Reason labels the count of passed-over candidates
	// (pistra_failover_skipped_total): budget_exceeded, ...
	Reason string
	// Error is the client's answer when no candidate is sent at all.
	Error *dialect.Error
	// Final refuses the request, not only the candidate: the attempt loop
	// answers with Error at once instead of trying the next candidate.
	Final bool
}

// Gates chains gates: a candidate is admitted only when every one admits
// it, in order; a refusal gives back what the earlier ones took.
type Gates []Gate

var _ Gate = Gates(nil)

func (gs Gates) Admit(r *Request, c *plan.Candidate) (Ticket, *Refusal) {
	held := NothingHeld
	for _, g := range gs {
		t, no := g.Admit(r, c)
		if no != nil {
			held.Release()
			return nil, no
		}
		held = join(held, t)
	}
	return held, nil
}

// join is one ticket for two; a gate that took nothing adds nothing.
func join(a, b Ticket) Ticket {
	switch {
	case a == NothingHeld:
		return b
	case b == NothingHeld:
		return a
	}
	return both{a, b}
}

// both is two gates' tickets closed together.
type both [2]Ticket

func (b both) Release() { b[0].Release(); b[1].Release() }

func (b both) Settle(o *Outcome) { b[0].Settle(o); b[1].Settle(o) }

func (b both) Spend(u *meter.Usage) *Refusal {
	if no := Spend(b[0], u); no != nil {
		Spend(b[1], u)
		return no
	}
	return Spend(b[1], u)
}

// Spender is a ticket that takes spend while its answer still runs: a
// WebSocket session's, whose usage arrives turn by turn.
type Spender interface {
	// Spend takes u on top of what the ticket holds, and refuses the rest
	// of the answer once that takes a limit past it.
	Spend(u *meter.Usage) *Refusal
}

// Spend takes u on t when t takes spend as it goes; a ticket that does
// not refuses nothing.
func Spend(t Ticket, u *meter.Usage) *Refusal {
	if s, ok := t.(Spender); ok {
		return s.Spend(u)
	}
	return nil
}

// Ticket is what one admission took. The attempt loop calls exactly one
// of its methods, once.
type Ticket interface {
	// Release gives the claim back: the candidate was abandoned for
	// another, or nothing of its answer reached the client.
	Release()
	// Settle closes the claim on the answer the candidate served.
	Settle(o *Outcome)
}

// Outcome is what a served candidate's answer was.
type Outcome struct {
	// Status is the served upstream answer's status (the client may have
	// been sent another, when the gateway could not use the answer); 101
	// for a WebSocket session that was established.
	Status int
	// Usage is what the answer reported using: for an answer cut short,
	// what it reported before it broke.
	Usage meter.Usage
	// Model is the upstream model that served: the candidate's, or the
	// one a pool's endpoint picker rewrote the request to.
	Model string
}

// AdmitAll admits every candidate and settles nothing: the gate of a
// gateway that holds nothing back.
type AdmitAll struct{}

var _ Gate = AdmitAll{}

func (AdmitAll) Admit(*Request, *plan.Candidate) (Ticket, *Refusal) { return NothingHeld, nil }

// NothingHeld is the ticket of an admission that took nothing.
var NothingHeld Ticket = nothingHeld{}

type nothingHeld struct{}

func (nothingHeld) Release()        {}
func (nothingHeld) Settle(*Outcome) {}
