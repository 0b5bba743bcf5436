package main

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/gen"
)

const module = "github.com/pistra/pistra"

// TestLinksNoCompiler holds pistrad to the rule that the runtime never
// carries the compiler (README.md#layout): listing its dependencies is enough, and
// builds nothing.
func TestLinksNoCompiler(t *testing.T) {
	// go test puts the go command's own GOROOT/bin first on PATH, so this is
	// the toolchain running the test.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to list pistrad's dependencies with: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	// A listing that misses what pistrad surely links proves nothing.
	if !slices.Contains(deps, module+"/runtime/server") {
		t.Fatalf("go list -deps does not name runtime/server; got:\n%s", out)
	}
	for _, p := range deps {
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
