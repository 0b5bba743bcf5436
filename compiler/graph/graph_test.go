package graph_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/graph"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// providers is how many providers the large policy has: the size a page
// attached to a pull request is quoted for.
const providers = 50

// largePolicy has n providers, each with a native OpenAI channel and an
// Anthropic-dialect compat channel that keeps nothing, primary for its own
// model, serving the models of the two before it (which fail over to it)
// and a shared one; a profile requiring usage
// details skips every compat channel, one limited to half the models
// denies the rest.
func largePolicy(n int) testkit.Policy {
	p := testkit.Policy{Providers: map[string]testkit.Provider{}, Primary: map[string]string{"shared": "p00"},
		Profiles: map[string]testkit.Profile{"default": {}, "metered": {RequireCaps: []string{"usage_details"}}}}
	var half []string
	for i := range n {
		name, own := fmt.Sprintf("p%02d", i), fmt.Sprintf("model-%02d", i)
		if i%2 == 0 {
			half = append(half, own)
		}
		p.Primary[own] = name
		p.Providers[name] = testkit.Provider{
			BaseURL: fmt.Sprintf("http://127.0.0.1:%d/v1", 10000+i),
			Models: map[string]testkit.Model{own: {MaxTokens: 1024}, "shared": {MaxTokens: 1024},
				fmt.Sprintf("model-%02d", (i+n-1)%n): {MaxTokens: 1024}, fmt.Sprintf("model-%02d", (i+n-2)%n): {MaxTokens: 1024}},
			Channels: map[string]testkit.Channel{
				"native": {Dialect: "openai", Tier: "native"},
				"compat": {Dialect: "anthropic", Tier: "provider_compat", Preserves: testkit.Keeps(),
					VerifiedAt: "2026-11-01", VerifiedBy: "https://example.com/compat", Origin: "catalog.cue"},
			},
			Retries:  &testkit.Retries{Max: 1, On: []string{"5xx"}},
			Timeout:  "30s",
			Failover: &testkit.Failover{To: []string{fmt.Sprintf("p%02d", (i+1)%n), fmt.Sprintf("p%02d", (i+2)%n)}, On: []string{"5xx", "timeout"}},
		}
	}
	p.Profiles["half"] = testkit.Profile{AllowedModels: append(half, "shared"), Budgets: []string{"half-daily"},
		AccessRules: []testkit.Rule{{Name: "no-p01", When: `provider == "p01"`, Code: "p01_excluded"}}}
	p.AccessRules = []testkit.Rule{{Name: "no-p02-shared", When: `provider == "p02" && upstream_model == "shared"`, Code: "p02_shared_excluded"}}
	p.Budgets = []testkit.Budget{{Name: "half-daily", Limit: 1000000, Window: "day", Cost: testkit.Cost{Type: "TotalToken"}}}
	return p
}

func compileLarge(t *testing.T) *plan.Graph {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), largePolicy(providers).Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestLargePolicy: the page of a 50-provider policy reads back whole,
// every plan of every profile with its candidates and skips, stays small
// enough to attach to a pull request, and is the same bytes twice.
func TestLargePolicy(t *testing.T) {
	g := compileLarge(t)
	var a, b bytes.Buffer
	if err := graph.Render(&a, g, graph.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := graph.Render(&b, g, graph.Options{Base: g}); err != nil {
		t.Fatal(err)
	}
	page, err := testkit.ReadGraphPage(a.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Providers) != providers || len(page.FailoverEdges) != 2*providers {
		t.Errorf("overview: %d providers, %d failover edges; want %d, %d", len(page.Providers), len(page.FailoverEdges), providers, 2*providers)
	}
	refs, cands, skips := 0, 0, 0
	for _, pp := range page.Plans {
		refs += len(pp.Refs)
		cands += len(pp.Candidates)
		skips += len(pp.Skips)
		if len(pp.Boxes) != len(pp.Candidates) {
			t.Errorf("%s %v: %d boxes, %d rows", pp.Profile, pp.Refs, len(pp.Boxes), len(pp.Candidates))
		}
	}
	entries, wantCands, wantSkips := 0, 0, 0
	for _, prof := range g.Profiles {
		seen := map[int]bool{}
		for _, e := range g.Tables[prof.Table].Entries {
			entries++
			if !seen[e.Plan] {
				seen[e.Plan] = true
				wantCands += len(g.CandidatesOf(&g.Plans[e.Plan]))
				wantSkips += len(g.SkipsOf(&g.Plans[e.Plan]))
			}
		}
	}
	if refs != entries || cands != wantCands || skips != wantSkips || skips == 0 {
		t.Errorf("page shows %d names, %d candidates, %d skips; the graph has %d, %d, %d", refs, cands, skips, entries, wantCands, wantSkips)
	}
	checkSettings(t, g, page)
	const limit = 4 << 20
	if a.Len() > limit {
		t.Errorf("the page of %d providers is %d bytes, over %d", providers, a.Len(), limit)
	}
	t.Logf("%d providers, %d plan sections, %d names: %d bytes", providers, len(page.Plans), refs, a.Len())
	var again bytes.Buffer
	if err := graph.Render(&again, g, graph.Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), again.Bytes()) {
		t.Error("two renders of one graph differ")
	}
	if bytes.Contains(b.Bytes(), []byte(`class="modified`)) || bytes.Contains(b.Bytes(), []byte(` added"`)) {
		t.Error("a graph against itself is marked changed")
	}
}

// checkSettings: every profile lists the deployment's rule, the half
// profile its own after it and its budget.
func checkSettings(t *testing.T, g *plan.Graph, page testkit.GraphPage) {
	t.Helper()
	wantRules := []string{"no-p02-shared", "no-p01"}
	for _, prof := range g.Profiles {
		var rules []string
		for _, r := range page.Rules[prof.Name] {
			rules = append(rules, r.Name)
		}
		if want := wantRules[:1]; prof.Name != "half" && !slices.Equal(rules, want) {
			t.Errorf("profile %s: rules %v, want %v", prof.Name, rules, want)
		}
	}
	if b := page.Budgets["half"]; len(b) != 1 || b[0].Name != "half-daily" {
		t.Errorf("profile half: budgets %v, want half-daily", b)
	}
	var halfRules []string
	for _, r := range page.Rules["half"] {
		halfRules = append(halfRules, r.Name)
	}
	if !slices.Equal(halfRules, wantRules) {
		t.Errorf("profile half: rules %v, want %v (deployment first)", halfRules, wantRules)
	}
}
