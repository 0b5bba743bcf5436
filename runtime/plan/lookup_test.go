package plan_test

import (
	"slices"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// Profiles of lookupGraph.
const (
	pDefault = iota // every name; its own loss action unset
	pLimited        // gpt-4o-mini only; allows lossy serving
	pShared         // shares pDefault's table
	pEmpty          // a table with no entries
)

// Plans of lookupGraph, by what serves them.
type lookupPlans struct{ openai, claude, translated, embed, hidden int }

// lookupGraph is a small catalog as the compiler would compile it: oa
// serves gpt-4o-mini (alias fast) and an embedding model, an serves
// claude-haiku-4-5 natively on messages and translated on chat; "hidden"
// has a plan that every candidate was skipped from; "orphan" is served by
// no table at all.
func lookupGraph() (*plan.Graph, lookupPlans) {
	b := testkit.NewGraph("sha256:lookup")
	oa := b.Provider(plan.Provider{Name: "oa", Pool: -1, Models: []plan.Model{{Name: "gpt-4o-mini"}, {Name: "text-embedding-3-small"}, {Name: "orphan"}},
		Aliases: []plan.Alias{{Name: "fast", Target: "gpt-4o-mini"}}})
	an := b.Provider(plan.Provider{Name: "an", Pool: -1, Models: []plan.Model{{Name: "claude-haiku-4-5"}}})
	native := func(p int, model string) []plan.Candidate {
		return []plan.Candidate{{Provider: p, Tier: plan.TierNative, Model: model, Preserves: plan.AllCaps, Primary: true}}
	}
	var ps lookupPlans
	ps.openai = b.Plan(plan.Plan{NativeOnly: true, Listed: true}, native(oa, "gpt-4o-mini"), nil)
	ps.claude = b.Plan(plan.Plan{NativeOnly: true, Listed: true}, native(an, "claude-haiku-4-5"), nil)
	ps.translated = b.Plan(plan.Plan{Listed: true}, []plan.Candidate{{Provider: an, Tier: plan.TierTranslation, Model: "claude-haiku-4-5",
		Translate: plan.TranslateOpenAIAnthropic, Preserves: plan.AllCaps &^ plan.TranslationLosses[plan.TranslateOpenAIAnthropic], Primary: true}}, nil)
	ps.embed = b.Plan(plan.Plan{NativeOnly: true, Listed: true}, native(oa, "text-embedding-3-small"), nil)
	ps.hidden = b.Plan(plan.Plan{}, nil, []plan.Skip{{Provider: oa, Channel: -1, Model: "hidden", Reason: "model_denied"}})
	all := b.Table(
		plan.Entry{Route: plan.RouteResponses, Model: "gpt-4o-mini", Plan: ps.openai},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt-4o-mini", Plan: ps.openai},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "fast", Plan: ps.openai},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "claude-haiku-4-5", Plan: ps.translated},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "hidden", Plan: ps.hidden},
		plan.Entry{Route: plan.RouteMessages, Model: "claude-haiku-4-5", Plan: ps.claude},
		plan.Entry{Route: plan.RouteEmbeddings, Model: "text-embedding-3-small", Plan: ps.embed},
	)
	limited := b.Table(plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt-4o-mini", Plan: ps.openai})
	b.Profile(plan.Profile{Name: "default", Table: all})
	b.Profile(plan.Profile{Name: "limited", AllowedModels: []string{"gpt-4o-mini"}, OnFidelityLoss: plan.LossAllow, Table: limited})
	b.Profile(plan.Profile{Name: "shared", Table: all})
	b.Profile(plan.Profile{Name: "empty", Table: b.Table()})
	return b.Build(), ps
}

func TestLookup(t *testing.T) {
	g, ps := lookupGraph()
	const none = -1
	cases := []struct {
		name    string
		profile int
		route   plan.Route
		model   string
		want    int // plan index, or none
	}{
		{"a model on its route", pDefault, plan.RouteChatCompletions, "gpt-4o-mini", ps.openai},
		{"an alias has its own entry, sharing the model's plan", pDefault, plan.RouteChatCompletions, "fast", ps.openai},
		{"one plan serves two routes", pDefault, plan.RouteResponses, "gpt-4o-mini", ps.openai},
		{"a name is planned per route: native on messages", pDefault, plan.RouteMessages, "claude-haiku-4-5", ps.claude},
		{"a name is planned per route: translated on chat", pDefault, plan.RouteChatCompletions, "claude-haiku-4-5", ps.translated},
		{"a plan with every candidate skipped is still found", pDefault, plan.RouteChatCompletions, "hidden", ps.hidden},
		{"the first entry of the table", pDefault, plan.RouteChatCompletions, "claude-haiku-4-5", ps.translated},
		{"the last entry of the table", pDefault, plan.RouteResponses, "gpt-4o-mini", ps.openai},
		{"a name served only on other routes", pDefault, plan.RouteMessages, "gpt-4o-mini", none},
		{"an alias not planned on the route", pDefault, plan.RouteResponses, "fast", none},
		{"a route with no entries", pDefault, plan.RouteCompletions, "gpt-4o-mini", none},
		{"a catalog name no table serves", pDefault, plan.RouteChatCompletions, "orphan", none},
		{"a name the catalog does not know", pDefault, plan.RouteChatCompletions, "gpt-5", none},
		{"names are exact: no case folding", pDefault, plan.RouteChatCompletions, "GPT-4o-mini", none},
		{"names are exact: no prefix", pDefault, plan.RouteChatCompletions, "gpt-4o", none},
		{"a name sorting before every entry", pDefault, plan.RouteChatCompletions, "", none},
		{"a name sorting after every entry", pDefault, plan.RouteResponses, "zzz", none},
		{"an unknown route", pDefault, plan.Route("bogus"), "gpt-4o-mini", none},
		{"a profile sharing the table sees its plans", pShared, plan.RouteMessages, "claude-haiku-4-5", ps.claude},
		{"a limited profile keeps its allowed model", pLimited, plan.RouteChatCompletions, "gpt-4o-mini", ps.openai},
		{"a limited profile has no plan for another name", pLimited, plan.RouteChatCompletions, "claude-haiku-4-5", none},
		{"a limited profile has no plan for its model's alias", pLimited, plan.RouteChatCompletions, "fast", none},
		{"an empty table has no plan at all", pEmpty, plan.RouteChatCompletions, "gpt-4o-mini", none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ok := g.Lookup(c.profile, c.route, c.model)
			switch {
			case c.want == none && (ok || p != nil):
				t.Fatalf("Lookup = %+v, %v; want no plan", p, ok)
			case c.want != none && (!ok || p != &g.Plans[c.want]):
				t.Fatalf("Lookup = %+v, %v; want plan %d %+v", p, ok, c.want, g.Plans[c.want])
			}
		})
	}
}

func TestRoutesOf(t *testing.T) {
	g, _ := lookupGraph()
	cases := []struct {
		name    string
		profile int
		model   string
		want    []plan.Route
	}{
		{"a model on two routes, in Routes order", pDefault, "gpt-4o-mini", []plan.Route{plan.RouteChatCompletions, plan.RouteResponses}},
		{"a name on both dialects' routes", pDefault, "claude-haiku-4-5", []plan.Route{plan.RouteChatCompletions, plan.RouteMessages}},
		{"an alias, on its own routes only", pDefault, "fast", []plan.Route{plan.RouteChatCompletions}},
		{"a plan with every candidate skipped still counts", pDefault, "hidden", []plan.Route{plan.RouteChatCompletions}},
		{"embeddings", pDefault, "text-embedding-3-small", []plan.Route{plan.RouteEmbeddings}},
		{"a catalog name no table serves", pDefault, "orphan", nil},
		{"a name the catalog does not know", pDefault, "gpt-5", nil},
		{"a limited profile's own routes", pLimited, "gpt-4o-mini", []plan.Route{plan.RouteChatCompletions}},
		{"a limited profile, a name it may not use", pLimited, "claude-haiku-4-5", nil},
		{"a shared table", pShared, "gpt-4o-mini", []plan.Route{plan.RouteChatCompletions, plan.RouteResponses}},
		{"an empty table has no route sets", pEmpty, "gpt-4o-mini", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := g.RoutesOf(c.profile, c.model); !slices.Equal(got, c.want) {
				t.Fatalf("RoutesOf = %v, want %v", got, c.want)
			}
		})
	}
}

// TestRouteSetsOf: one set per catalog name, entries the derivation does
// not know left out rather than guessed.
func TestRouteSetsOf(t *testing.T) {
	names := []string{"a", "b", "c"}
	set := func(rs ...plan.Route) (s plan.RouteSet) {
		for _, r := range rs {
			s |= 1 << slices.Index(plan.Routes, r)
		}
		return s
	}
	cases := []struct {
		name    string
		entries []plan.Entry
		want    []plan.RouteSet
	}{
		{"no entries: no sets", nil, nil},
		{"one route", []plan.Entry{{Route: plan.RouteEmbeddings, Model: "c"}}, []plan.RouteSet{0, 0, set(plan.RouteEmbeddings)}},
		{"routes of one name join", []plan.Entry{{Route: plan.RouteChatCompletions, Model: "a"}, {Route: plan.RouteMessages, Model: "a"}},
			[]plan.RouteSet{set(plan.RouteChatCompletions, plan.RouteMessages), 0, 0}},
		{"an unknown route is left out", []plan.Entry{{Route: "bogus", Model: "b"}}, []plan.RouteSet{0, 0, 0}},
		{"an unknown name is left out", []plan.Entry{{Route: plan.RouteResponses, Model: "zz"}, {Route: plan.RouteResponses, Model: "a"}},
			[]plan.RouteSet{set(plan.RouteResponses), 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := plan.RouteSetsOf(names, c.entries); !slices.Equal(got, c.want) {
				t.Fatalf("RouteSetsOf = %v, want %v", got, c.want)
			}
		})
	}
}

func TestListed(t *testing.T) {
	g, _ := lookupGraph()
	cases := []struct {
		name    string
		profile int
		route   plan.Route
		want    []string
	}{
		{"chat lists models, aliases and translated names, not a plan nothing can serve", pDefault, plan.RouteChatCompletions,
			[]string{"claude-haiku-4-5", "fast", "gpt-4o-mini"}},
		{"messages", pDefault, plan.RouteMessages, []string{"claude-haiku-4-5"}},
		{"responses", pDefault, plan.RouteResponses, []string{"gpt-4o-mini"}},
		{"a route without entries lists nothing", pDefault, plan.RouteCompletions, nil},
		{"a limited profile lists its allowed model", pLimited, plan.RouteChatCompletions, []string{"gpt-4o-mini"}},
		{"a limited profile, a route it has nothing on", pLimited, plan.RouteMessages, nil},
		{"an empty table", pEmpty, plan.RouteChatCompletions, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := g.Listed(c.profile, c.route); !slices.Equal(got, c.want) {
				t.Fatalf("Listed = %q, want %q", got, c.want)
			}
		})
	}
}

func TestKnown(t *testing.T) {
	g, _ := lookupGraph()
	for name, want := range map[string]bool{
		"gpt-4o-mini": true, "fast": true, "orphan": true, "hidden": true, "claude-haiku-4-5": true,
		"gpt-5": false, "": false, "Fast": false, "gpt-4o": false, "zzz": false,
	} {
		if got := g.Known(name); got != want {
			t.Errorf("Known(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCandidatesAndSkipsOf: a plan's lists are looked up by index, and
// plans of equal lists share them.
func TestCandidatesAndSkipsOf(t *testing.T) {
	g, ps := lookupGraph()
	if c := g.CandidatesOf(&g.Plans[ps.translated]); len(c) != 1 || c[0].Translate != plan.TranslateOpenAIAnthropic || c[0].Model != "claude-haiku-4-5" {
		t.Errorf("translated plan's candidates %+v", c)
	}
	if s := g.SkipsOf(&g.Plans[ps.hidden]); len(s) != 1 || s[0].Reason != "model_denied" || s[0].Channel != -1 {
		t.Errorf("hidden plan's skips %+v", s)
	}
	if c := g.CandidatesOf(&g.Plans[ps.hidden]); len(c) != 0 || c == nil {
		t.Errorf("hidden plan's candidates %#v, want an empty list", c)
	}
	if s := g.SkipsOf(&g.Plans[ps.openai]); len(s) != 0 {
		t.Errorf("openai plan's skips %+v", s)
	}
	if g.Plans[ps.openai].Skips != g.Plans[ps.claude].Skips {
		t.Errorf("two plans without skips do not share the empty list")
	}
}

func TestLossAction(t *testing.T) {
	cases := []struct {
		name            string
		deployment, own plan.LossAction
		want            plan.LossAction
	}{
		{"unset inherits the deployment's reject", plan.LossReject, "", plan.LossReject},
		{"unset inherits the deployment's allow", plan.LossAllow, "", plan.LossAllow},
		{"the profile's allow overrides reject", plan.LossReject, plan.LossAllow, plan.LossAllow},
		{"the profile's reject overrides allow", plan.LossAllow, plan.LossReject, plan.LossReject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &plan.Graph{OnFidelityLoss: c.deployment, Profiles: []plan.Profile{{OnFidelityLoss: c.own}}}
			if got := g.LossAction(0); got != c.want {
				t.Fatalf("LossAction = %q, want %q", got, c.want)
			}
		})
	}
}

// TestPoolOf: a candidate of a pool-backed provider is sent to the pool's
// members unless its channel has a URL of its own; its member set is its
// subset's DNS name, else the pool's.
func TestPoolOf(t *testing.T) {
	g := &plan.Graph{
		Pools: []plan.Pool{{Name: "gpus", DNS: "vllm:8000", Subsets: []plan.Subset{{Name: "h100", DNS: "h100:8000"}}}},
		Providers: []plan.Provider{
			{Name: "vllm", Pool: 0, Channels: []plan.Channel{{Name: "native"}, {Name: "gateway", BaseURL: "http://gw/v1"}}},
			{Name: "hosted", Pool: -1, BaseURL: "https://api/v1", Channels: []plan.Channel{{Name: "native"}}},
		},
	}
	if p := g.PoolOf(&plan.Candidate{Provider: 0, Channel: 0}); p == nil || p.Name != "gpus" {
		t.Errorf("pooled channel: %v", p)
	}
	for _, c := range []plan.Candidate{{Provider: 0, Channel: 1}, {Provider: 1, Channel: 0}} {
		if p := g.PoolOf(&c); p != nil {
			t.Errorf("%+v: %v", c, p)
		}
	}
	pool := &g.Pools[0]
	for subset, want := range map[string]string{"": "vllm:8000", "h100": "h100:8000", "l4": ""} {
		if got := pool.MemberDNS(subset); got != want {
			t.Errorf("subset %q: %q, want %q", subset, got, want)
		}
	}
}
