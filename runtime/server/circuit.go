package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/circuit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/snapshot"
)

// ReasonCircuitOpen labels a candidate passed over because its provider's
// circuit is open.
const ReasonCircuitOpen = "circuit_open"

// circuitGate passes over the candidates of providers whose circuit is
// open, or half-open with its probes taken. Unlike a suspension, an open
// circuit is the failover the policy asked for: the request moves on to
// the next candidate, and only when none serves is it answered 503 with
// what is left of the cool-down.
type circuitGate struct{}

var _ admission.Gate = circuitGate{}

func (circuitGate) Admit(r *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	b := r.Snapshot.Circuit(c.Provider)
	if b == nil {
		return admission.NothingHeld, nil
	}
	probe, ok, wait := b.Allow(time.Now())
	if !ok {
		return nil, circuitRefusal(r.Snapshot, c, wait)
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
type probeTicket struct{ circuit.Probe }

func (t probeTicket) Release()                  { t.Return() }
func (t probeTicket) Settle(*admission.Outcome) { t.Return() }

// circuitOpen is what the gate would say of c now, without taking a
// half-open probe: what preflight shows. Nil when c would be admitted.
func circuitOpen(snap *snapshot.Snapshot, c *plan.Candidate) *admission.Refusal {
	b := snap.Circuit(c.Provider)
	if b == nil {
		return nil
	}
	if ok, wait := b.Peek(time.Now()); !ok {
		return circuitRefusal(snap, c, wait)
	}
	return nil
}

func circuitRefusal(snap *snapshot.Snapshot, c *plan.Candidate, wait time.Duration) *admission.Refusal {
	name := snap.Graph.Providers[c.Provider].Name
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeCircuitOpen,
		"provider %q is not being sent requests after consecutive failures (its circuit is open); it is tried again in %v",
		name, wait.Round(time.Millisecond))
	e.RetryAfter, e.Transient = wait, true
	return &admission.Refusal{Reason: ReasonCircuitOpen, Error: e}
}

// logCircuit logs each breaker transition: opening is a warning, since a
// provider is then out of rotation.
func (s *Server) logCircuit(provider string, from, to circuit.State, failures int64) {
	level := slog.LevelInfo
	if to == circuit.Open {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "circuit "+to.String(), "provider", provider, "from", from.String(), "consecutive_failures", failures)
}

// circuitStatus reports every breaker of the serving snapshot.
func circuitStatus(snap *snapshot.Snapshot, now time.Time) []circuit.Status {
	var out []circuit.Status
	for _, b := range snap.Circuits {
		if b != nil {
			out = append(out, b.Status(now))
		}
	}
	return out
}
