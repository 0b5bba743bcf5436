package circuit

import (
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// ReasonCircuitOpen labels a candidate passed over because its provider's
// circuit is open.
const ReasonCircuitOpen = "circuit_open"

var _ admission.Gate = (*Set)(nil)

// Admit passes over the candidates of providers whose circuit is open, or
// half-open with its probes taken. Unlike a suspension, an open circuit
// is the failover the policy asked for: the request moves on to the next
// candidate, and only when none serves is it answered 503 with what is
// left of the cool-down.
func (s *Set) Admit(r *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	b := s.Breaker(r.Graph, c.Provider)
	if b == nil {
		return admission.NothingHeld, nil
	}
	probe, ok, wait := b.Allow(time.Now())
	if !ok {
		return nil, refusal(r.Graph, c, wait)
	}
	if !probe.Taken() {
		return admission.NothingHeld, nil
	}
	return probeTicket{probe}, nil
}

// probeTicket holds a half-open probe for the request. Whatever closes it,
// the probe is given back unless the attempts recorded a verdict: a
// request a later gate held back, or whose client left before it was sent,
// must not use the provider's one chance to come back.
type probeTicket struct{ Probe }

func (t probeTicket) Release()                  { t.Return() }
func (t probeTicket) Settle(*admission.Outcome) { t.Return() }

// Refused is what Admit would say of c now, without taking a half-open
// probe: what preflight shows. Nil when c would be admitted.
func (s *Set) Refused(g *plan.Graph, c *plan.Candidate) *admission.Refusal {
	b := s.Breaker(g, c.Provider)
	if b == nil {
		return nil
	}
	if ok, wait := b.Peek(time.Now()); !ok {
		return refusal(g, c, wait)
	}
	return nil
}

func refusal(g *plan.Graph, c *plan.Candidate, wait time.Duration) *admission.Refusal {
	name := g.Providers[c.Provider].Name
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeCircuitOpen,
		"provider %q is not being sent requests after consecutive failures (its circuit is open); it is tried again in %v",
		name, wait.Round(time.Millisecond))
	e.RetryAfter, e.Transient = wait, true
	return &admission.Refusal{Reason: ReasonCircuitOpen, Error: e}
}

// Success and Failure are told how an attempt on provider p of graph g
// went (see Breaker.Success and Breaker.Failure); a provider without a
// circuit hears nothing.
func (s *Set) Success(g *plan.Graph, p int) {
	if b := s.Breaker(g, p); b != nil {
		b.Success(time.Now())
	}
}

func (s *Set) Failure(g *plan.Graph, p int) {
	if b := s.Breaker(g, p); b != nil {
		b.Failure(time.Now())
	}
}
