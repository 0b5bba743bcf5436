package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/circuit"
	"github.com/pistra/pistra/runtime/plan"
)

// TestProbeOfARequestNeverSent: a half-open circuit's one probe, taken for
// a request the budget then refuses, is given back: the next request is
// the probe, and its success closes the circuit, instead of the provider
// staying out for another cool-down on a request that was never sent.
func TestProbeOfARequestNeverSent(t *testing.T) {
	g := testGraph()
	g.Providers[0].Circuit = &plan.Circuit{Failures: 1, CoolDownMS: 60_000, HalfOpenProbes: 1}
	g.Budgets = []plan.Budget{{Name: "small", Limit: 100, Window: plan.WindowHour, Per: plan.PerKey,
		CostType: plan.CostOutputToken, CostExpr: -1}}
	for i := range g.Profiles {
		g.Profiles[i].Budgets = []int{0}
	}
	s := newTestServerWith(t, g, okUpstream())
	b := s.circuits.Breaker(s.snap.Load().Graph, 0)
	b.Failure(time.Now().Add(-time.Minute)) // open, its cool-down over: the next request is a probe
	bearer := map[string]string{"Authorization": "Bearer k-default", "Content-Type": "application/json"}
	chat := func(maxTokens string) *http.Response {
		return s.do(publicRequest{"POST", "/v1/chat/completions",
			`{"model":"gpt","max_tokens":` + maxTokens + `,"messages":[{"role":"user","content":"hi"}]}`, bearer}).Result()
	}
	if r := chat("1000"); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("over the budget: %d, want 429", r.StatusCode)
	}
	if r := chat("10"); r.StatusCode != http.StatusOK {
		t.Fatalf("the request after the refused one: %d, want the probe let through", r.StatusCode)
	}
	if st := b.Status(time.Now()); st.State != circuit.Closed {
		t.Fatalf("after the probe's success: %s, want closed", st.State)
	}
}
