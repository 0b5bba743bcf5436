package suspend

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// counted is a Store that counts its changes and how often it was listed.
type counted struct {
	mu     sync.Mutex
	list   []Suspension
	gen    uint64
	listed int
}

func (c *counted) SetSuspension(_ context.Context, s Suspension) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(slices.DeleteFunc(c.list, func(x Suspension) bool { return x.Kind == s.Kind && x.Name == s.Name }), s)
	c.gen++
	return nil
}

func (c *counted) ClearSuspension(_ context.Context, kind Kind, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = slices.DeleteFunc(c.list, func(x Suspension) bool { return x.Kind == kind && x.Name == name })
	c.gen++
	return nil
}

func (c *counted) Suspended(kind Kind, name string) (Suspension, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.list, func(x Suspension) bool { return x.Kind == kind && x.Name == name })
	if i < 0 {
		return Suspension{}, false
	}
	return c.list[i], true
}

func (c *counted) Suspensions() []Suspension {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listed++
	return slices.Clone(c.list)
}

func (c *counted) SuspensionGeneration() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// TestRulesOf: a rule suspension holds, per profile, for every rule of its
// name, deployment-wide and the profile's own, at its bit; a key or
// provider suspension holds for no rule; the store is listed once per
// change, not per request; lifting restores the empty set.
func TestRulesOf(t *testing.T) {
	g := testGraph() // deployment: no-o1; profile a: no-o1, small
	st := &counted{}
	r := NewRules(st)
	ctx := context.Background()
	if r.Of(g, 0) != 0 || r.Of(g, 1) != 0 {
		t.Fatal("suspended with nothing suspended")
	}
	_ = st.SetSuspension(ctx, Suspension{Kind: KindProvider, Name: "small"})
	if r.Of(g, 0) != 0 {
		t.Error("a provider suspension suspended a rule of its name")
	}
	_ = st.SetSuspension(ctx, Suspension{Kind: KindRule, Name: "no-o1"})
	listed := st.listed
	for range 3 {
		if got := r.Of(g, 0); got != 0b011 {
			t.Errorf("profile a: %b, want the deployment's no-o1 and its own", got)
		}
		if got := r.Of(g, 1); got != 0b1 {
			t.Errorf("profile b: %b, want the deployment's no-o1", got)
		}
	}
	if st.listed != listed+1 {
		t.Errorf("listed %d times for one change", st.listed-listed)
	}
	_ = st.SetSuspension(ctx, Suspension{Kind: KindRule, Name: "small"})
	if got := r.Of(g, 0); got != 0b111 {
		t.Errorf("after small: %b", got)
	}
	other := testGraph() // a reload: the same policy, another graph
	if got := r.Of(other, 0); got != 0b111 {
		t.Errorf("on a reloaded graph: %b", got)
	}
	_ = st.ClearSuspension(ctx, KindRule, "no-o1")
	_ = st.ClearSuspension(ctx, KindRule, "small")
	if got := r.Of(other, 0); got != 0 {
		t.Errorf("after lifting: %b", got)
	}
	if NewRules(nil).Of(g, 0) != 0 || NewRules(nil).Status(g) != nil {
		t.Error("without a store a rule is suspended")
	}
}

// TestRulesStatus: each rule suspension is listed with the rules it
// stands for and the decisions it changed, counted once per decision and
// rule.
func TestRulesStatus(t *testing.T) {
	g := testGraph()
	g.Profiles[0].Rules[1].Static = true
	g.Profiles[0].Rules[1].Code = "small_only"
	st := &counted{}
	ctx := context.Background()
	_ = st.SetSuspension(ctx, Suspension{Kind: KindRule, Name: "small", Reason: "incident 7"})
	_ = st.SetSuspension(ctx, Suspension{Kind: KindKey, Name: "dev"})
	r := NewRules(st)
	at := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	lifted := []plan.Skip{{Provider: 0, Rules: 0b100}, {Provider: 1, Rules: 0b100}}
	r.Lifted(g, 0, lifted, at.Add(-time.Minute))
	r.Lifted(g, 0, lifted, at)
	list := r.Status(g)
	if len(list) != 1 {
		t.Fatalf("status %+v, want the one rule suspension", list)
	}
	s := list[0]
	want := []RuleDecl{{Profile: "a", Code: "small_only", Static: true}}
	if s.Name != "small" || s.Reason != "incident 7" || !slices.Equal(s.Rules, want) || s.Lifted != 2 || !s.LastLifted.Equal(at) {
		t.Errorf("status %+v, want small (%+v) lifted twice, last at %s", s, want, at)
	}
}
