package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/gen"
	"github.com/pistra/pistra/internal/testkit"
)

const module = "github.com/pistra/pistra"

// TestLinksNoCompiler holds pistrad to the rule that the runtime never
// carries the compiler: listing its dependencies is enough.
func TestLinksNoCompiler(t *testing.T) {
	for _, p := range testkit.Deps(t, module+"/runtime/server") {
		if p == module+"/compiler" || strings.HasPrefix(p, module+"/compiler/") {
			t.Errorf("pistrad links %s", p)
		}
	}
}

// TestCompiledInGraphMatchesItsDigest: gen/ as checked in loads, so the
// digest status reports for it is the content's; and the compiled-in graph
// is held to its digest like a bundle file, so one edited after the build
// (a hand edit of gen/) does not serve.
func TestCompiledInGraphMatchesItsDigest(t *testing.T) {
	if _, _, err := loader("", gen.Graph)(); err != nil {
		t.Fatal(err)
	}
	edited := *gen.Graph
	edited.Providers = slices.Clone(gen.Graph.Providers)
	edited.Providers[0].BaseURL = "http://elsewhere.example/v1"
	if _, _, err := loader("", &edited)(); err == nil || !strings.Contains(err.Error(), "edited after pistrac build") {
		t.Fatalf("a compiled-in graph edited after the build: %v, want refused", err)
	}
}
