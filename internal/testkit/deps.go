package testkit

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Deps lists the packages the package under test links, by `go list
// -deps`, which builds nothing. A listing that lacks sure, a package it
// surely links, proves nothing and fails t.
func Deps(t testing.TB, sure string) []string {
	t.Helper()
	// go test puts the go command's own GOROOT/bin first on PATH, so this is
	// the toolchain running the test.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to list the dependencies with: %v", err)
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
	if !slices.Contains(deps, sure) {
		t.Fatalf("go list -deps does not name %s; got:\n%s", sure, out)
	}
	return deps
}
