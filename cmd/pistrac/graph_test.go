package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// graphPage runs pistrac graph with args and reads the page it writes.
func graphPage(t *testing.T, args ...string) (testkit.GraphPage, []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "graph.html")
	pistrac(t, "", append([]string{"graph", "-o", out}, args...)...).want(t, exitOK)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page, err := testkit.ReadGraphPage(b)
	if err != nil {
		t.Fatal(err)
	}
	return page, b
}

var policyPos = regexp.MustCompile(`^\S+\.cue:\d+:\d+$`)

// TestGraphPage: the page of the default policy is well formed, its
// pictures are SVG, and every (profile, route, name) of the graph is on it
// once with its candidates in attempt order (table and picture alike, a
// failover edge wherever the provider changes) and its skips, each with
// the reason and the file:line that causes it.
func TestGraphPage(t *testing.T) {
	g, err := compiler.Compile(defaultPolicy)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := graphPage(t, defaultPolicy)
	if page.Summary != "" {
		t.Errorf("a page without -base has a diff summary: %q", page.Summary)
	}
	if want := 1 + len(page.Plans); page.SVGs != want {
		t.Errorf("%d pictures, want %d (the overview and one per plan)", page.SVGs, want)
	}
	for i, p := range g.Providers {
		if i >= len(page.Providers) || page.Providers[i] != p.Name {
			t.Errorf("overview providers %v, want %s at %d", page.Providers, p.Name, i)
		}
		for _, to := range p.Failover.To {
			if e := p.Name + " -> " + g.Providers[to].Name; !slices.Contains(page.FailoverEdges, e) {
				t.Errorf("overview lacks failover edge %s (has %v)", e, page.FailoverEdges)
			}
		}
	}
	skips := 0
	for _, prof := range g.Profiles {
		var budgets []string
		for _, b := range page.Budgets[prof.Name] {
			budgets = append(budgets, b.Name)
			if !policyPos.MatchString(b.At) {
				t.Errorf("profile %s: budget %s placed at %q", prof.Name, b.Name, b.At)
			}
		}
		var want []string
		for _, b := range prof.Budgets {
			want = append(want, g.Budgets[b].Name)
		}
		if !slices.Equal(budgets, want) {
			t.Errorf("profile %s: budgets %v, want %v", prof.Name, budgets, want)
		}
		for _, e := range g.Tables[prof.Table].Entries {
			pp := planOn(t, page, prof.Name, string(e.Route)+" "+e.Model)
			checkPlan(t, g, &g.Plans[e.Plan], pp, prof.Name+" "+string(e.Route)+" "+e.Model)
			skips += len(g.SkipsOf(&g.Plans[e.Plan]))
		}
	}
	if skips == 0 {
		t.Fatal("the default policy has no skips: the test checks none")
	}
}

// planOn is the one section of profile that (route, name) ref reaches.
func planOn(t *testing.T, page testkit.GraphPage, profile, ref string) testkit.PagePlan {
	t.Helper()
	var found []testkit.PagePlan
	for _, p := range page.Plans {
		if p.Profile == profile && slices.ContainsFunc(p.Refs, func(r testkit.PageItem) bool { return r.Name == ref }) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s %s is on %d plan sections, want 1", profile, ref, len(found))
	}
	return found[0]
}

func checkPlan(t *testing.T, g *plan.Graph, p *plan.Plan, pp testkit.PagePlan, what string) {
	t.Helper()
	cands := g.CandidatesOf(p)
	var want, kinds []string
	for i, c := range cands {
		prov := &g.Providers[c.Provider]
		want = append(want, prov.Name+"/"+prov.Channels[c.Channel].Name)
		if i > 0 {
			kind := "next"
			if c.Provider != cands[i-1].Provider {
				kind = "failover"
			}
			kinds = append(kinds, kind)
		}
	}
	names := func(items []testkit.PageItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Name)
		}
		return out
	}
	if got := names(pp.Candidates); !slices.Equal(got, want) {
		t.Errorf("%s: candidate rows %v, want %v", what, got, want)
	}
	if got := names(pp.Boxes); !slices.Equal(got, want) {
		t.Errorf("%s: picture boxes %v, want %v", what, got, want)
	}
	if !slices.Equal(pp.Edges, kinds) {
		t.Errorf("%s: edges %v, want %v", what, pp.Edges, kinds)
	}
	for _, c := range pp.Candidates {
		if !policyPos.MatchString(c.At) {
			t.Errorf("%s: candidate %s placed at %q", what, c.Name, c.At)
		}
	}
	skips := g.SkipsOf(p)
	if len(pp.Skips) != len(skips) {
		t.Fatalf("%s: %d skip rows, want %d: %v", what, len(pp.Skips), len(skips), pp.Skips)
	}
	for i, s := range skips {
		row := pp.Skips[i]
		prov := g.Providers[s.Provider].Name
		if !strings.HasPrefix(row.Name, prov) || !strings.Contains(row.Name, " "+s.Reason) {
			t.Errorf("%s: skip row %q, want %s skipped for %s", what, row.Name, prov, s.Reason)
		}
		if !policyPos.MatchString(row.At) {
			t.Errorf("%s: skip %s placed at %q", what, row.Name, row.At)
		}
	}
}

// TestGraphBase: against the bundle of the policy it was made from, the
// page marks nothing; against the default policy's bundle, a compat
// channel that starts keeping usage details is marked where diff reports
// it: a new candidate of the metered profile's plans (whose sections are
// modified), a modified one of the default profile's.
func TestGraphBase(t *testing.T) {
	bundle := filepath.Join(buildDefault(t), "bundle.json")
	same, raw := graphPage(t, "-base", bundle, defaultPolicy)
	if same.Summary != "against the base: 0 plans added, 0 removed, 0 modified" {
		t.Errorf("summary against itself: %q", same.Summary)
	}
	for _, mark := range []string{"added", "modified", "removed"} {
		if strings.Contains(string(raw), `class="`+mark) || strings.Contains(string(raw), " "+mark+`"`) {
			t.Errorf("the page against its own bundle marks something %s", mark)
		}
	}
	dir := copyPolicy(t, `preserves: []`, `preserves: ["usage_details"]`)
	page, _ := graphPage(t, "-base", bundle, dir)
	if !regexp.MustCompile(`^against the base: 0 plans added, 0 removed, [1-9]\d* modified$`).MatchString(page.Summary) {
		t.Errorf("summary: %q", page.Summary)
	}
	const compat = "fake-anthropic/openai-compat"
	for _, tc := range []struct{ profile, mark string }{{"metered", "added"}, {"default", "modified"}} {
		pp := planOn(t, page, tc.profile, "chat_completions smart")
		if pp.Mark != "modified" {
			t.Errorf("%s chat_completions smart: section marked %q, want modified", tc.profile, pp.Mark)
		}
		i := slices.IndexFunc(pp.Candidates, func(c testkit.PageItem) bool { return c.Name == compat })
		if i < 0 || pp.Candidates[i].Mark != tc.mark || pp.Boxes[i].Mark != tc.mark {
			t.Errorf("%s chat_completions smart: %s not marked %s: rows %v, boxes %v", tc.profile, compat, tc.mark, pp.Candidates, pp.Boxes)
		}
		for _, r := range pp.Refs {
			if r.Mark != "modified" {
				t.Errorf("%s %s marked %q, want modified", tc.profile, r.Name, r.Mark)
			}
		}
		if len(pp.Changes) == 0 {
			t.Errorf("%s chat_completions smart: no change lines", tc.profile)
		}
	}
	// A plan of a profile the change does not touch stays unmarked.
	for _, pp := range page.Plans {
		if !slices.ContainsFunc(pp.Boxes, func(b testkit.PageItem) bool { return b.Name == compat }) &&
			!slices.ContainsFunc(pp.Skips, func(s testkit.PageItem) bool { return strings.HasPrefix(s.Name, compat) }) && pp.Mark != "" {
			t.Errorf("%s %v: marked %s without the changed channel", pp.Profile, pp.Refs, pp.Mark)
		}
	}
}

// TestGraphCommand: stdout by default, the same bytes as -o; a bundle
// reads as its policy but without positions; mistakes are usage errors.
func TestGraphCommand(t *testing.T) {
	_, file := graphPage(t, defaultPolicy)
	r := pistrac(t, "", "graph", defaultPolicy)
	r.want(t, exitOK)
	if r.stdout != string(file) {
		t.Error("stdout and -o pages differ")
	}
	fromBundle, _ := graphPage(t, "-bundle", filepath.Join(buildDefault(t), "bundle.json"))
	if len(fromBundle.Plans) == 0 || fromBundle.Plans[0].Candidates[0].At != "" {
		t.Errorf("a bundle's page: %d plans, first candidate at %q (a bundle keeps no positions)", len(fromBundle.Plans), fromBundle.Plans[0].Candidates[0].At)
	}
	pistrac(t, "", "graph").want(t, exitUsage)
	pistrac(t, "", "graph", "-base", "no/such/bundle.json", defaultPolicy).want(t, exitUsage)
	pistrac(t, "", "graph", "-o", filepath.Join(t.TempDir(), "no", "dir", "g.html"), defaultPolicy).want(t, exitUsage)
}
