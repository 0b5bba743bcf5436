package a2a_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/a2a"
	"github.com/pistra/pistra/runtime/agentcall"
	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/snapshot"
)

const (
	clientKey   = "pk-client-key"
	otherKey    = "pk-other-key"
	agentSecret = "agent-secret"
	// costPerCall is the agent's; the budget's own (1) is an MCP call's.
	costPerCall = 3
)

// gateway serves agent "helper" at /a2a/helper as pistrad does: the real
// gate opens each request's call for its key (clientKey's profile may
// reach the agent and draws on budget "calls"; otherKey's reaches
// nothing), and a2a.Protocol serves it.
type gateway struct {
	*httptest.Server
	base string
	snap *snapshot.Snapshot
	gate *agentcall.Gate
}

func startGateway(t *testing.T, agentURL string) *gateway {
	return startGatewayWith(t, agentURL, 0)
}

func startGatewayWith(t *testing.T, agentURL string, timeout time.Duration) *gateway {
	t.Helper()
	g := &plan.Graph{
		SourceHash: strings.Repeat("0", 64), OnFidelityLoss: plan.LossReject,
		Agents: []plan.Service{{Name: "helper", Kind: plan.KindAgent, URL: agentURL, CredentialEnv: "HELPER_TOKEN",
			CostPerCall: costPerCall, TimeoutMS: timeout.Milliseconds()}},
		Budgets: []plan.Budget{{Name: "calls", Limit: 1000, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostTotalToken,
			CostExpr: -1, CostPerCall: 1}},
		Profiles: []plan.Profile{{Name: "agents", Agents: []int{0}, AgentBudgets: []int{0}}, {Name: "none"}},
		Keys: []plan.Key{{Name: "ci", Hash: testkit.HashKey(clientKey), Profile: 0},
			{Name: "other", Hash: testkit.HashKey(otherKey), Profile: 1}},
		Tables: []plan.Table{{}},
	}
	snap, err := snapshot.New(g, "test", func(k string) (string, bool) { return agentSecret, k == "HELPER_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	gw := &gateway{snap: snap, gate: &agentcall.Gate{Budgets: budget.New(budget.NewMemory(), m, time.Now), Metrics: m,
		Transport: http.DefaultTransport}}
	gw.Server = httptest.NewServer(http.HandlerFunc(gw.serve))
	t.Cleanup(gw.Close)
	gw.base = gw.URL + "/a2a/helper"
	return gw
}

func (gw *gateway) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/a2a/helper")
	if !ok {
		http.NotFound(w, r)
		return
	}
	key := 0
	if r.Header.Get("Authorization") == "Bearer "+otherKey {
		key = 1
	}
	rec := &record.Record{}
	c, e := gw.gate.Open(agentcall.Caller{Snap: gw.snap, Profile: gw.snap.Graph.Keys[key].Profile, Key: key}, plan.KindAgent, "helper", rec)
	if e != nil {
		agentcall.Refuse(w, nil, false, e, rec)
		return
	}
	defer c.End()
	var body []byte
	if r.Method == http.MethodPost {
		body, _ = io.ReadAll(r.Body)
	}
	a2a.Protocol{}.Serve(c, &agentcall.Exchange{W: w, R: r, Path: rest, Body: body, RequestID: "req-1", Record: rec})
}

// spent is what budget "calls" was charged; nothing is left held once
// every call has ended.
func (gw *gateway) spent(t *testing.T) uint64 {
	t.Helper()
	rows, err := gw.gate.Budgets.Report(gw.snap.Graph)
	if err != nil {
		t.Fatal(err)
	}
	var spent, held uint64
	for _, r := range rows {
		spent, held = spent+r.Spent, held+r.Held
	}
	if held != 0 {
		t.Fatalf("%d still held", held)
	}
	return spent
}

// charged is how many calls were charged, at the agent's cost_per_call.
func (gw *gateway) charged(t *testing.T) int {
	t.Helper()
	s := gw.spent(t)
	if s%costPerCall != 0 {
		t.Fatalf("spent %d, not a multiple of the agent's cost_per_call", s)
	}
	return int(s / costPerCall)
}

// counted is pistra_agent_calls_total for the agent, class and outcome.
func (gw *gateway) counted(t *testing.T, class, outcome string) float64 {
	t.Helper()
	return testkit.Counter(t, gw.gate.Metrics.Registry(), "pistra_agent_calls_total",
		map[string]string{"kind": "agent", "service": "helper", "class": class, "outcome": outcome})
}

// post sends a raw JSON-RPC body to the gateway's agent endpoint with key.
func (gw *gateway) post(t *testing.T, key, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, gw.base, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
