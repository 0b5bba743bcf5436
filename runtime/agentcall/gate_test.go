package agentcall

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/snapshot"
	"github.com/pistra/pistra/runtime/suspend"
)

// suspensions is a Store in memory.
type suspensions struct {
	mu  sync.Mutex
	set map[[2]string]suspend.Suspension
}

func (s *suspensions) SetSuspension(_ context.Context, x suspend.Suspension) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set[[2]string{string(x.Kind), x.Name}] = x
	return nil
}

func (s *suspensions) ClearSuspension(_ context.Context, k suspend.Kind, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, [2]string{string(k), name})
	return nil
}

func (s *suspensions) Suspended(k suspend.Kind, name string) (suspend.Suspension, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.set[[2]string{string(k), name}]
	return x, ok
}

func (s *suspensions) Suspensions() []suspend.Suspension { return nil }
func (s *suspensions) SuspensionGeneration() uint64      { return 0 }

type fixture struct {
	gate  *Gate
	snap  *snapshot.Snapshot
	susp  *suspensions
	seen  chan *http.Request
	reply func(w http.ResponseWriter, r *http.Request)
}

// newFixture serves a policy with an MCP server and an agent on a real
// server: profile "tools" (key 0) may reach both, draws on budget
// "calls" (limit 5, cost_per_call 2), and is held to a rule denying the
// method "tools/danger"; profile "none" (key 1) reaches nothing.
func newFixture(t *testing.T) *fixture {
	f := &fixture{susp: &suspensions{set: map[[2]string]suspend.Suspension{}}, seen: make(chan *http.Request, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.seen <- r
		f.reply(w, r)
	}))
	t.Cleanup(srv.Close)
	rule, _, cerr := expr.CompileRule(`method == "tools/danger" && service == "search" && route == "mcp"`)
	if cerr != nil {
		t.Fatal(cerr)
	}
	g := &plan.Graph{
		SourceHash: strings.Repeat("0", 64), OnFidelityLoss: plan.LossReject,
		MCPServers: []plan.Service{{Name: "search", Kind: plan.KindMCPServer, URL: srv.URL + "/mcp", CredentialEnv: "SEARCH_TOKEN",
			Headers: []plan.Header{{Name: "x-team", Value: "platform"}}}},
		Agents: []plan.Service{{Name: "planner", Kind: plan.KindAgent, URL: srv.URL, CostPerCall: 3}},
		Budgets: []plan.Budget{{Name: "calls", Limit: 5, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostTotalToken,
			CostExpr: -1, CostPerCall: 2}},
		Profiles: []plan.Profile{
			{Name: "tools", MCPServers: []int{0}, Agents: []int{0}, AgentBudgets: []int{0},
				Rules: []plan.Rule{{Name: "no-danger", Code: "danger_denied", Message: "not that tool", Expr: 0}}},
			{Name: "none"},
		},
		Keys:   []plan.Key{{Name: "ci", Hash: testkit.HashKey("k0"), Profile: 0}, {Name: "other", Hash: testkit.HashKey("k1"), Profile: 1}},
		CEL:    []plan.Expr{rule},
		Tables: []plan.Table{{}},
	}
	env := func(k string) (string, bool) {
		return map[string]string{"SEARCH_TOKEN": "upstream-secret"}[k], k == "SEARCH_TOKEN"
	}
	snap, err := snapshot.New(g, "test", env)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	f.snap = snap
	f.gate = &Gate{Budgets: budget.New(budget.NewMemory(), m, time.Now), Suspensions: f.susp, Metrics: m, Transport: http.DefaultTransport}
	return f
}

func (f *fixture) open(t *testing.T, key int, k plan.ServiceKind, name string) (*Call, *record.Record, *dialect.Error) {
	rec := &record.Record{}
	c, e := f.gate.Open(Caller{Snap: f.snap, Profile: f.snap.Graph.Keys[key].Profile, Key: key}, k, name, rec)
	return c, rec, e
}

func (f *fixture) held(t *testing.T) (spent, held uint64) {
	rows, err := f.gate.Budgets.Report(f.snap.Graph)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		spent, held = spent+r.Spent, held+r.Held
	}
	return spent, held
}

func TestOpenRefusesBeforeAnyUpstream(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		key  int
		kind plan.ServiceKind
		name string
		code dialect.Code
	}{
		{1, plan.KindMCPServer, "search", dialect.CodeServiceNotAllowed},
		{1, plan.KindAgent, "planner", dialect.CodeServiceNotAllowed},
		{0, plan.KindMCPServer, "planner", dialect.CodeServiceNotFound},
		{0, plan.KindAgent, "nobody", dialect.CodeServiceNotFound},
	} {
		if _, _, e := f.open(t, c.key, c.kind, c.name); e == nil || e.Code != c.code {
			t.Errorf("%s %s for key %d: got %v, want %s", c.kind, c.name, c.key, e, c.code)
		}
	}
	if len(f.seen) != 0 {
		t.Errorf("the service saw %d requests", len(f.seen))
	}
}

func TestAdmitHoldsThenSettles(t *testing.T) {
	f := newFixture(t)
	c, rec, e := f.open(t, 0, plan.KindMCPServer, "search")
	if e != nil {
		t.Fatal(e)
	}
	if e := c.Admit([]byte("1"), "tools/call", "tool", true); e != nil {
		t.Fatal(e)
	}
	if e := c.Admit([]byte("2"), "tools/list", "other", false); e != nil {
		t.Fatal(e)
	}
	if spent, held := f.held(t); spent != 0 || held != 2 {
		t.Fatalf("spent %d held %d, want 0 and the call's 2", spent, held)
	}
	c.Answered([]byte("1"), true, "")
	c.Answered([]byte("1"), true, "") // a second answer to the same id charges nothing more
	c.Answered([]byte("2"), true, "")
	if spent, held := f.held(t); spent != 2 || held != 0 {
		t.Fatalf("spent %d held %d, want 2 and 0", spent, held)
	}
	if rec.Call.Calls != 1 || rec.Call.Charge != 2 || rec.Call.Budgets != "calls" || rec.Call.Key != "ci" || rec.Call.Method != "tools/call" {
		t.Errorf("record %+v", rec.Call)
	}
	// An error answer, a result asking for input and no answer at all
	// are given back.
	c.Admit([]byte("3"), "tools/call", "tool", true)
	c.Answered([]byte("3"), false, "upstream_error")
	c.Admit([]byte("4"), "prompts/get", "prompt", true)
	c.Answered([]byte("4"), false, "input_required")
	c.Admit([]byte("5"), "resources/read", "resource", true)
	c.End()
	if spent, held := f.held(t); spent != 2 || held != 0 {
		t.Fatalf("spent %d held %d, want 2 and 0", spent, held)
	}
	reg := f.gate.Metrics.Registry()
	for outcome, want := range map[string]float64{"charged": 1, "upstream_error": 1, "unanswered": 1} {
		class := map[string]string{"charged": "tool", "upstream_error": "tool", "unanswered": "resource"}[outcome]
		got := testkit.Counter(t, reg, "pistra_agent_calls_total", map[string]string{"kind": "mcp_server", "service": "search", "class": class, "outcome": outcome})
		if got != want {
			t.Errorf("outcome %s: counted %v, want %v", outcome, got, want)
		}
	}
}

func TestAdmitRefuses(t *testing.T) {
	f := newFixture(t)
	c, _, _ := f.open(t, 0, plan.KindAgent, "planner")
	// The agent's own cost (3) against a limit of 5: one call fits.
	if e := c.Admit([]byte("1"), "message/send", "message", true); e != nil {
		t.Fatal(e)
	}
	c.Answered([]byte("1"), true, "")
	if e := c.Admit([]byte("2"), "message/send", "message", true); e == nil || e.Code != dialect.CodeBudgetExceeded {
		t.Fatalf("got %v, want budget_exceeded", e)
	}
	mc, _, _ := f.open(t, 0, plan.KindMCPServer, "search")
	if e := mc.Admit([]byte("1"), "tools/danger", "other", false); e == nil || e.Code != "danger_denied" || e.Message != "not that tool" {
		t.Fatalf("got %v, want the rule's refusal", e)
	}
	f.susp.SetSuspension(context.Background(), suspend.Suspension{Kind: suspend.KindMCPServer, Name: "search", Reason: "incident 9"})
	if e := mc.Admit([]byte("2"), "tools/list", "other", false); e == nil || e.Code != dialect.CodeServiceSuspended || !strings.Contains(e.Message, "incident 9") {
		t.Fatalf("got %v, want service_suspended", e)
	}
	f.susp.SetSuspension(context.Background(), suspend.Suspension{Kind: suspend.KindRule, Name: "no-danger"})
	f.susp.ClearSuspension(context.Background(), suspend.KindMCPServer, "search")
	if e := mc.Admit([]byte("3"), "tools/danger", "other", false); e != nil {
		t.Fatalf("a suspended rule denied: %v", e)
	}
	mc.End()
	c.End()
}

func TestSendInjectsTheServiceCredential(t *testing.T) {
	f := newFixture(t)
	f.reply = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "s-1")
		w.Header().Set("Set-Cookie", "x=1")
		w.WriteHeader(200)
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	}
	c, _, _ := f.open(t, 0, plan.KindMCPServer, "search")
	c.Admit([]byte("1"), "tools/call", "tool", true)
	client := http.Header{"Authorization": {"Bearer k0"}, "Mcp-Session-Id": {"s-1"}, "Accept": {"text/event-stream"}, "Cookie": {"c=1"}}
	h := &Headers{Forward: func(string) bool { return true }, Relay: func(k string) bool { return k != "Set-Cookie" }}
	resp, err := c.Send(context.Background(), http.MethodPost, "", []byte(`{}`), client, h, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	r := <-f.seen
	if r.URL.Path != "/mcp" || r.Header.Get("Authorization") != "Bearer upstream-secret" || r.Header.Get("Cookie") != "" ||
		r.Header.Get("X-Team") != "platform" || r.Header.Get("Mcp-Session-Id") != "s-1" || r.Header.Get("X-Request-Id") != "req-1" {
		t.Errorf("the service got %s %v", r.URL.Path, r.Header)
	}
	w := httptest.NewRecorder()
	if err := c.Relay(w, resp, h); err != nil {
		t.Fatal(err)
	}
	if w.Header().Get("Mcp-Session-Id") != "s-1" || w.Header().Get("Set-Cookie") != "" || !strings.Contains(w.Body.String(), `"id":1`) {
		t.Errorf("relayed %v %q", w.Header(), w.Body)
	}
	if spent, held := f.held(t); spent != 2 || held != 0 {
		t.Errorf("spent %d held %d, want the streamed result charged", spent, held)
	}
	c.End()
}
