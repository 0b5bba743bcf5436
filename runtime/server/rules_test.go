package server

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/suspend"
)

// ruleStore is a suspension store of rules alone, set and lifted by the
// test, its generation moving with each change as a ledger's does.
type ruleStore struct {
	mu    sync.Mutex
	rules map[string]bool
	gen   uint64
}

func (s *ruleStore) SetSuspension(_ context.Context, sus suspend.Suspension) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules[sus.Name] = true
	s.gen++
	return nil
}

func (s *ruleStore) ClearSuspension(_ context.Context, _ suspend.Kind, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rules, name)
	s.gen++
	return nil
}

func (s *ruleStore) Suspended(kind suspend.Kind, name string) (suspend.Suspension, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return suspend.Suspension{Kind: kind, Name: name}, kind == suspend.KindRule && s.rules[name]
}

func (s *ruleStore) Suspensions() []suspend.Suspension {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []suspend.Suspension
	for name := range s.rules {
		out = append(out, suspend.Suspension{Kind: suspend.KindRule, Name: name, Reason: "test"})
	}
	return out
}

func (s *ruleStore) SuspensionGeneration() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// ruledGraph serves "gpt" from oa, which a static deployment-wide rule
// denies: the plan has no candidate until the rule is suspended.
func ruledGraph(t testing.TB) *plan.Graph {
	b := testkit.NewGraph("sha256:ruled")
	oa := b.Provider(plan.Provider{Name: "oa", BaseURL: "http://oa.test/v1", Pool: -1, Auth: "bearer",
		Channels: []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
			Routes: []plan.Route{plan.RouteChatCompletions}, Origin: "native", Preserves: plan.AllCaps}}})
	denied := plan.Candidate{Provider: oa, Model: "gpt-upstream", Tier: plan.TierNative, Preserves: plan.AllCaps, Origin: "native",
		Primary: true, Denied: 1}
	gpt := b.DeniedPlan(plan.Plan{NativeOnly: true}, []plan.Candidate{denied},
		[]plan.Skip{{Provider: oa, Channel: 0, Model: "gpt-upstream", Reason: "oa_denied", Rules: 1}})
	b.Key("default", "k-default", b.Profile(plan.Profile{Name: "default",
		Table: b.Table(plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt", Plan: gpt})}))
	e, static, err := expr.CompileRule(`provider == "oa"`)
	if err != nil || !static {
		t.Fatalf("rule: %v (static %v)", err, static)
	}
	b.CEL = append(b.CEL, e)
	b.Rules = []plan.Rule{{Name: "no-oa", Code: "oa_denied", Expr: len(b.CEL) - 1, Static: true}}
	return b.Build()
}

// TestSuspendedRuleServes: a request a folded rule denies is refused with
// its code; suspended, the same request is served, preflight names the
// rule it skipped and what it would have denied, and the status counts
// the request it let through; lifted, the request is refused again.
func TestSuspendedRuleServes(t *testing.T) {
	o := testOptions(ruledGraph(t), okUpstream())
	store := &ruleStore{rules: map[string]bool{}}
	o.Suspensions = store
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	bearer := map[string]string{"Authorization": "Bearer k-default"}
	req := body(plainBody, "gpt")
	refused := func(step string) {
		t.Helper()
		for _, path := range []string{"/v1/chat/completions", "/v1/preflight"} {
			rec := s.do(publicRequest{"POST", path, req, bearer})
			if code, _ := errorCode(t, rec.Body.Bytes()); rec.Code != 403 || code != "oa_denied" {
				t.Errorf("%s: %s answered %d %s, want 403 oa_denied", step, path, rec.Code, rec.Body)
			}
		}
	}
	refused("before the suspension")

	ctx := context.Background()
	if err := s.Suspend(ctx, suspend.Suspension{Kind: suspend.KindRule, Name: "no-oa"}); err != nil {
		t.Fatal(err)
	}
	if rec := s.do(publicRequest{"POST", "/v1/chat/completions", req, bearer}); rec.Code != 200 {
		t.Fatalf("suspended: %d %s", rec.Code, rec.Body)
	}
	rec := s.do(publicRequest{"POST", "/v1/preflight", req, bearer})
	var a struct {
		SuspendedRules []struct {
			Name, Code string
			Static     bool
			WouldDeny  []struct{ Provider, Model, Reason string } `json:"would_deny"`
		} `json:"suspended_rules"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &a); rec.Code != 200 || err != nil || len(a.SuspendedRules) != 1 {
		t.Fatalf("preflight %d %s (%v)", rec.Code, rec.Body, err)
	}
	if r := a.SuspendedRules[0]; r.Name != "no-oa" || r.Code != "oa_denied" || !r.Static || len(r.WouldDeny) != 1 ||
		r.WouldDeny[0].Provider != "oa" || r.WouldDeny[0].Model != "gpt-upstream" || r.WouldDeny[0].Reason != "oa_denied" {
		t.Errorf("preflight names %+v", r)
	}
	st := s.Status().SuspendedRules
	if len(st) != 1 || st[0].Name != "no-oa" || st[0].Lifted != 1 || len(st[0].Rules) != 1 || !st[0].Rules[0].Static {
		t.Errorf("status lists %+v, want no-oa with the one request it let through", st)
	}

	if err := s.Unsuspend(ctx, suspend.KindRule, "no-oa"); err != nil {
		t.Fatal(err)
	}
	refused("lifted")
	if st := s.Status().SuspendedRules; len(st) != 0 {
		t.Errorf("status after the lift: %+v", st)
	}
}
