package circuit

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// TestGatePassesOverAnOpenCircuit: an open circuit refuses its
// provider's candidates for what is left of the cool-down, as a transient
// 503 that is not Final (the request moves on to the next candidate); a
// provider without a circuit, or with a closed one, is admitted holding
// nothing.
func TestGatePassesOverAnOpenCircuit(t *testing.T) {
	set := NewSet(nil)
	g := graph(&plan.Circuit{Failures: 1, CoolDownMS: 60_000, HalfOpenProbes: 1}, nil)
	set.Load(g)
	r := &admission.Request{Graph: g}
	a, b := &plan.Candidate{Provider: 0, Primary: true}, &plan.Candidate{Provider: 1}
	for _, c := range []*plan.Candidate{a, b} {
		if held, no := set.Admit(r, c); held != admission.NothingHeld || no != nil {
			t.Fatalf("provider %d closed: ticket %v, refusal %+v", c.Provider, held, no)
		}
	}
	set.Failure(g, 0)
	set.Failure(g, 1) // no circuit: nothing to open
	held, no := set.Admit(r, a)
	if held != nil || no == nil || no.Final || no.Reason != ReasonCircuitOpen {
		t.Fatalf("open: ticket %v, refusal %+v", held, no)
	}
	if e := no.Error; e.Status != http.StatusServiceUnavailable || e.Code != dialect.CodeCircuitOpen || !e.Transient ||
		e.RetryAfter <= 59*time.Second || e.RetryAfter > time.Minute || !strings.Contains(e.Message, `provider "a"`) {
		t.Errorf("refusal %+v", e)
	}
	if peek := set.Refused(g, a); peek == nil || peek.Reason != ReasonCircuitOpen {
		t.Errorf("preflight's peek of the open circuit: %+v", peek)
	}
	if held, no := set.Admit(r, b); held != admission.NothingHeld || no != nil || set.Refused(g, b) != nil {
		t.Errorf("the provider without a circuit: ticket %v, refusal %+v", held, no)
	}
}

// TestProbeTicketGivesTheProbeBack: a half-open circuit's probe is held
// by the admission's ticket; closing the ticket without a verdict, by
// Release or Settle, gives it back for the next request; after a verdict
// it changes nothing. Preflight's peek takes no probe.
func TestProbeTicketGivesTheProbeBack(t *testing.T) {
	set := NewSet(nil)
	g := graph(&plan.Circuit{Failures: 1, CoolDownMS: 60_000, HalfOpenProbes: 1})
	set.Load(g)
	set.Breaker(g, 0).Failure(time.Now().Add(-time.Minute)) // open, its cool-down over
	r, c := &admission.Request{Graph: g}, &plan.Candidate{Provider: 0}
	for _, closeTicket := range []func(admission.Ticket){
		func(t admission.Ticket) { t.Release() },
		func(t admission.Ticket) { t.Settle(&admission.Outcome{Status: 429}) },
	} {
		if set.Refused(g, c) != nil {
			t.Fatal("preflight refuses the probe a request would get")
		}
		held, no := set.Admit(r, c)
		if no != nil || held == admission.NothingHeld {
			t.Fatalf("half-open: ticket %v, refusal %+v, want the probe held", held, no)
		}
		if _, no := set.Admit(r, c); no == nil || set.Refused(g, c) == nil {
			t.Fatal("a second request took the one probe")
		}
		closeTicket(held)
	}
	held, _ := set.Admit(r, c)
	set.Success(g, 0)
	held.Settle(&admission.Outcome{Status: 200})
	if st := set.Breaker(g, 0).Status(time.Now()); st.State != Closed || st.Probes != 0 {
		t.Fatalf("after the probe's success: %+v", st)
	}
}

// TestOldGraphFindsItsProviderByName: a request still served under a
// graph a reload replaced finds its provider's breaker by name, so its
// verdicts count on the breaker requests of the new graph read, indexed
// as it was; a provider the new graph dropped, or one without a circuit
// in the old graph, has none.
func TestOldGraphFindsItsProviderByName(t *testing.T) {
	set := NewSet(nil)
	cfg := &plan.Circuit{Failures: 1, CoolDownMS: 60_000, HalfOpenProbes: 1}
	old := graph(cfg, cfg, nil) // a, b, c
	set.Load(old)
	next := &plan.Graph{Providers: []plan.Provider{{Name: "c", Circuit: cfg}, {Name: "a", Circuit: cfg}}}
	set.Load(next)
	if set.Breaker(old, 0) != set.Breaker(next, 1) || set.Breaker(old, 0) == nil {
		t.Fatal("a's breaker differs between the graphs")
	}
	if set.Breaker(old, 1) != nil {
		t.Error("b, dropped by the reload, still has a breaker")
	}
	if set.Breaker(old, 2) != nil {
		t.Error("c had no circuit in the old graph, and has one for its requests")
	}
	set.Failure(old, 0)
	if _, no := set.Admit(&admission.Request{Graph: next}, &plan.Candidate{Provider: 1}); no == nil {
		t.Error("a failure under the old graph did not open a's circuit for the new one")
	}
	if st := set.Status(time.Now()); len(st) != 2 || st[0].Provider != "c" || st[1].Provider != "a" || st[1].State != Open {
		t.Errorf("status of the graph serving: %+v", st)
	}
	// Two reloads on, old is no longer the previous graph: found by name.
	set.Load(&plan.Graph{Providers: []plan.Provider{{Name: "a", Circuit: cfg}}})
	if b := set.Breaker(old, 0); b == nil || b != set.Breaker(next, 1) {
		t.Error("a's breaker under a graph two reloads old differs")
	}
	if set.Breaker(next, 0) != nil {
		t.Error("c, dropped by the last reload, still has a breaker")
	}
}
