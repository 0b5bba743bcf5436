package proxy

import (
	"errors"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/circuit"
	"github.com/pistra/pistra/runtime/plan"
)

// TestCircuitCountsAttempts: every attempt tells its provider's breaker how
// it went. Connect failures, 5xx and timeouts are failures, retries
// included; a 429 neither fails nor ends the run; any other answer, a
// client's 4xx included, ends it.
func TestCircuitCountsAttempts(t *testing.T) {
	refused := testkit.Reply{Err: errors.New("dial tcp: connection refused")}
	e503, e429, e400 := testkit.JSON(503, `{}`), testkit.JSON(429, `{}`), testkit.JSON(400, `{}`)
	tests := []struct {
		name    string
		replies []testkit.Reply // to a, one per attempt (a retries once)
		state   circuit.State
		fails   int64
	}{
		{"connect and its retry", []testkit.Reply{refused, refused}, circuit.Open, 2},
		{"a 5xx and a 429 retried", []testkit.Reply{e503, e429}, circuit.Closed, 1},
		{"a timeout and a 5xx", []testkit.Reply{{Status: 200, Delay: time.Second}, e503}, circuit.Open, 2},
		{"a good retry ends the run", []testkit.Reply{e503, testkit.JSON(200, `{}`)}, circuit.Closed, 0},
		{"a client's 4xx is an answer", []testkit.Reply{e400}, circuit.Closed, 0},
	}
	a := plan.Candidate{Provider: 0, Model: "a-model", Primary: true, Origin: "native"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			provs := testProviders()[:1]
			provs[0].Failover, provs[0].TimeoutMS = plan.Failover{}, 50
			provs[0].Retry.On = append(provs[0].Retry.On, plan.FailureTimeout)
			provs[0].Circuit = &plan.Circuit{Failures: 2, CoolDownMS: 60_000, HalfOpenProbes: 1}
			g := &plan.Graph{Providers: provs}
			circuits := circuit.NewSet(nil)
			circuits.Load(g)
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": tt.replies})
			call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{a},
				providers: provs, graph: g, circuits: circuits}.serve(t, up)
			st := circuits.Breaker(g, 0).Status(time.Now())
			if st.State != tt.state || st.Failures != tt.fails {
				t.Errorf("after %d calls: %s with %d failures, want %s with %d", len(up.Calls("a.test")), st.State, st.Failures, tt.state, tt.fails)
			}
		})
	}
}
