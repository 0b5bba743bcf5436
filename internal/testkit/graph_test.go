package testkit

import (
	"slices"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

func TestGraphBuilderSharesWhatIsEqual(t *testing.T) {
	b := NewGraph("sha256:t")
	p := b.Provider(plan.Provider{Name: "p", Pool: -1, Models: []plan.Model{{Name: "m"}}, Aliases: []plan.Alias{{Name: "a", Target: "m"}}})
	cands := func() []plan.Candidate { return []plan.Candidate{{Provider: p, Model: "m", Primary: true}} }
	first := b.Plan(plan.Plan{Listed: true}, cands(), nil)
	again := b.Plan(plan.Plan{Listed: true}, cands(), []plan.Skip{})
	other := b.Plan(plan.Plan{}, nil, []plan.Skip{{Provider: p, Reason: "model_denied"}})
	table := b.Table(plan.Entry{Route: plan.RouteMessages, Model: "z", Plan: other}, plan.Entry{Route: plan.RouteChatCompletions, Model: "a", Plan: first})
	b.Key("k", "secret", b.Profile(plan.Profile{Name: "default", Table: table}))
	g := b.Build()
	if first != again || first == other || len(g.Plans) != 2 || len(g.CandidateLists) != 2 || len(g.SkipLists) != 2 {
		t.Fatalf("plans %d %d %d: %+v", first, again, other, g)
	}
	if g.CandidateLists[1] == nil || g.SkipLists[0] == nil {
		t.Errorf("an empty list is stored as null")
	}
	if e := g.Tables[0].Entries; e[0].Model != "a" || e[1].Model != "z" {
		t.Errorf("entries not sorted: %+v", e)
	}
	if !slices.Equal(g.Names, []string{"a", "m", "z"}) {
		t.Errorf("names %q", g.Names)
	}
	// sha256("secret")
	if g.Keys[0].Hash != "sha256:2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b" || g.Keys[0].Profile != 0 {
		t.Errorf("key %+v", g.Keys[0])
	}
}
