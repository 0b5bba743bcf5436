package main

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pistra/pistra"

// TestLinksNoCompiler holds pistrad to DESIGN.md's rule that the runtime
// never carries the compiler: listing its dependencies is enough, and
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
// digest status reports for it is the content's.
func TestCompiledInGraphMatchesItsDigest(t *testing.T) {
	if _, _, err := loader("")(); err != nil {
		t.Fatal(err)
	}
}
