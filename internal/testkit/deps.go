package testkit

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Module is the import path every package of the repository starts with.
const Module = "github.com/pistra/pistra"

// Deps lists what package pkg (a path as the go command takes it, relative
// to the test's directory) links, itself included: how a test holds a
// binary or a package to what it may depend on. Listing builds nothing.
// must is a package pkg surely links, so that a listing that misses it,
// and would prove nothing, fails the test instead.
func Deps(t testing.TB, pkg, must string) []string {
	t.Helper()
	// go test puts the go command's own GOROOT/bin first on PATH, so this is
	// the toolchain running the test.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to list %s's dependencies with: %v", pkg, err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list %s: %v\n%s", pkg, err, exit.Stderr)
		}
		t.Fatalf("go list %s: %v", pkg, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, must) {
		t.Fatalf("go list -deps %s does not name %s; got:\n%s", pkg, must, out)
	}
	return deps
}

// Under reports whether import path p is package pkg or one inside it.
func Under(p, pkg string) bool { return p == pkg || strings.HasPrefix(p, pkg+"/") }
