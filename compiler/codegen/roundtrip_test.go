package codegen

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

// TestGeneratedPackageRoundTrips is the proof that routing.go is the graph:
// it generates packages into a directory inside the module, builds and runs
// a program printing each package's Graph (with CEL loaded from the
// embedded cel.bundle) as JSON, and compares that with the input graph.
func TestGeneratedPackageRoundTrips(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	graphs := []struct {
		name string
		g    *plan.Graph
	}{
		{"maximal", bundletest.Maximal()},
		{"synthetic", bundletest.Synthetic(bundletest.Medium)},
	}
	// A leading underscore keeps the directory out of ./... should the
	// test die before cleaning up.
	dir, err := os.MkdirTemp(".", "_roundtrip")
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Base(dir)
	t.Cleanup(func() { os.RemoveAll(dir) })
	var imports, prints strings.Builder
	for _, c := range graphs {
		files, err := Generate(c.g)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		writeFiles(t, filepath.Join(dir, c.name), files)
		fmt.Fprintf(&imports, "\t%s %q\n", c.name, "github.com/pistra/pistra/compiler/codegen/"+dir+"/"+c.name)
		fmt.Fprintf(&prints, "\temit(%s.Graph)\n", c.name)
	}
	writeFiles(t, filepath.Join(dir, "main"), map[string][]byte{"main.go": []byte(fmt.Sprintf(printMain, imports.String(), prints.String()))})

	cmd := exec.Command(goTool, "run", "./"+dir+"/main")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, stderr.Bytes())
	}
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	if len(lines) != len(graphs) {
		t.Fatalf("got %d graphs back, want %d", len(lines), len(graphs))
	}
	for i, c := range graphs {
		if want := bytes.TrimSuffix(compactJSON(t, c.g), []byte("\n")); !bytes.Equal(lines[i], want) {
			t.Errorf("%s: the generated Graph differs from the input\n%s", c.name, firstDiff(lines[i], want))
		}
	}
}

const printMain = `package main

import (
	"encoding/json"
	"os"

	"github.com/pistra/pistra/runtime/plan"
%s)

func main() {
%s}

func emit(g *plan.Graph) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(g); err != nil {
		panic(err)
	}
}
`

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// firstDiff shows got and want around the first byte where they differ.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("at byte %d:\n got: ...%s\nwant: ...%s", i, got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
}
