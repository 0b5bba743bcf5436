package compiler_test

import (
	"testing"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/codegen"
	"github.com/pistra/pistra/runtime/plan"
)

// buildSynth compiles the synthetic policy in dir and generates gen/'s
// files, as `pistrac build` does (Generate gofmts the Go it renders).
func buildSynth(tb testing.TB, dir string) (*plan.Graph, map[string][]byte) {
	tb.Helper()
	g, err := compiler.Compile(dir)
	if err != nil {
		tb.Fatalf("the synthetic policy does not compile:\n%v", err)
	}
	files, err := codegen.Generate(g)
	if err != nil {
		tb.Fatalf("generating the synthetic policy: %v", err)
	}
	return g, files
}

// synthFigures are the sizes the benchmark reports.
type synthFigures struct {
	plans, distinctPlans, candidateLists, genBytes int
}

func figuresOf(g *plan.Graph, files map[string][]byte) synthFigures {
	f := synthFigures{distinctPlans: len(g.Plans), candidateLists: len(g.CandidateLists)}
	for _, p := range g.Profiles {
		f.plans += len(g.Tables[p.Table].Entries)
	}
	for _, b := range files {
		f.genBytes += len(b)
	}
	return f
}

// BenchmarkCompileLarge is the whole build of a large policy: load and
// check the CUE, plan, compile CEL, validate, render and gofmt.
func BenchmarkCompileLarge(b *testing.B) {
	dir := b.TempDir()
	if err := writeSynthPolicy(dir); err != nil {
		b.Fatal(err)
	}
	var f synthFigures
	for b.Loop() {
		f = figuresOf(buildSynth(b, dir))
	}
	b.ReportMetric(float64(f.plans), "plans")
	b.ReportMetric(float64(f.distinctPlans), "distinct_plans")
	b.ReportMetric(float64(f.candidateLists), "candidate_lists")
	b.ReportMetric(float64(f.genBytes), "gen_bytes")
}

// genBudget is the ceiling for gen/ on the large policy: the 2 MiB,
// raised by a quarter when Responses requests became routable to
// Anthropic providers whose compatible endpoint serves only chat
// completions (a route more for half the providers).
const genBudget = 5 << 19

// TestSyntheticPolicySize checks the large policy compiles to the shape it
// was written with, that sharing keeps distinct plans far fewer than plans,
// and that gen/ stays under its budget. It never measures time.
func TestSyntheticPolicySize(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a large policy")
	}
	dir := t.TempDir()
	if err := writeSynthPolicy(dir); err != nil {
		t.Fatal(err)
	}
	g, files := buildSynth(t, dir)
	if len(g.Providers) != synthProviderCount || len(g.Profiles) != synthProfiles ||
		len(g.Keys) != synthKeys || len(g.Budgets) != synthBudgets {
		t.Fatalf("compiled %d providers, %d profiles, %d keys, %d budgets; want %d, %d, %d, %d",
			len(g.Providers), len(g.Profiles), len(g.Keys), len(g.Budgets),
			synthProviderCount, synthProfiles, synthKeys, synthBudgets)
	}
	models := map[string]bool{}
	for _, p := range g.Providers {
		for _, m := range p.Models {
			models[m.Name] = true
		}
	}
	if len(models) != synthModelCount {
		t.Errorf("%d distinct models, want %d", len(models), synthModelCount)
	}
	f := figuresOf(g, files)
	t.Logf("plans %d, distinct plans %d, candidate lists %d, gen/ %d bytes", f.plans, f.distinctPlans, f.candidateLists, f.genBytes)
	// Every public name has a plan on at least one route for every
	// unrestricted profile.
	if f.plans < synthProfiles/2*len(g.Names) {
		t.Errorf("%d plans for %d names and %d unrestricted profiles: some names have no plan", f.plans, len(g.Names), synthProfiles/2)
	}
	if f.distinctPlans*2 > f.plans {
		t.Errorf("%d distinct plans of %d: plans shared by profiles are not stored once", f.distinctPlans, f.plans)
	}
	if f.genBytes > genBudget {
		t.Errorf("gen/ is %d bytes, over the %d budget", f.genBytes, genBudget)
	}
}
