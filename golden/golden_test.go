// Package golden holds end-to-end cases for pistrac: one folder per case,
// policy/*.cue as input and the expected outcome beside it:
//
//	errors.txt        the policy is refused with exactly these lines
//	warnings.txt      the policy compiles with exactly these warnings (a
//	                  case that compiles with warnings must have one)
//	decisions.json    (profile or key, route, model, caps) -> the candidate
//	                  that serves, or the refusal (authored, never rewritten)
//	explain.args      queries for `pistrac explain`, one per line, whose
//	explain.txt       output is pinned here
//	routing.go.want   the generated routing.go, for a few cases
//	catalog.txt       the `pistrac catalog` report, ages counted to today
//
// `go test ./golden/... -update` rewrites errors.txt, warnings.txt,
// explain.txt, routing.go.want and catalog.txt from the current compiler.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/codegen"
	"github.com/pistra/pistra/compiler/explain"
	"github.com/pistra/pistra/internal/testkit/goldenfile"
)

var update = flag.Bool("update", false, "rewrite errors.txt, warnings.txt, explain.txt, routing.go.want and catalog.txt from the current compiler")

// today is the day every case and example is compiled on: claims are dated
// against it (too old, or in the future, is a warning), so what a case pins
// does not change as days pass.
var today = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// minCases guards against the harness silently finding nothing.
const minCases = 30

func TestGolden(t *testing.T) {
	cases := caseDirs(t)
	if len(cases) < minCases {
		t.Fatalf("found %d golden cases, want at least %d", len(cases), minCases)
	}
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runCase(t, name)
		})
	}
}

// caseDirs lists the folders holding a policy/ directory.
func caseDirs(t *testing.T) []string {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if st, err := os.Stat(filepath.Join(e.Name(), "policy")); e.IsDir() && err == nil && st.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

func runCase(t *testing.T, name string) {
	g, warns, err := compiler.CompileWithWarningsAt(filepath.Join(name, "policy"), today)
	errFile := filepath.Join(name, "errors.txt")
	var cerrs compiler.Errors
	switch {
	case errors.As(err, &cerrs):
		if !exists(errFile) && !*update {
			t.Fatalf("policy refused, and the case has no errors.txt:\n%v", err)
		}
		goldenfile.Check(t, errFile, []byte(err.Error()+"\n"), *update)
		return
	case err != nil:
		t.Fatalf("compile failed outside the policy's errors: %v", err)
	case exists(errFile):
		t.Fatalf("policy compiled, but %s expects it to be refused", errFile)
	}
	ran := false
	switch warnFile := filepath.Join(name, "warnings.txt"); {
	case len(warns) > 0 || exists(warnFile):
		if !exists(warnFile) && !*update {
			t.Fatalf("policy compiled with warnings, and the case has no warnings.txt:\n%v", warns)
		}
		goldenfile.Check(t, warnFile, []byte(warns.Error()+"\n"), *update)
		ran = len(warns) > 0
	}
	if f := filepath.Join(name, "decisions.json"); exists(f) {
		runDecisions(t, g, f)
		ran = true
	}
	if f := filepath.Join(name, "explain.args"); exists(f) {
		goldenfile.Check(t, filepath.Join(name, "explain.txt"), runExplain(t, g, f), *update)
		ran = true
	}
	if f := filepath.Join(name, "catalog.txt"); exists(f) {
		var b bytes.Buffer
		if err := explain.Catalog(&b, g, today, "text"); err != nil {
			t.Fatalf("catalog: %v", err)
		}
		goldenfile.Check(t, f, b.Bytes(), *update)
		ran = true
	}
	if f := filepath.Join(name, "routing.go.want"); exists(f) {
		files, err := codegen.Generate(g)
		if err != nil {
			t.Fatalf("codegen: %v", err)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "routing.go", files["routing.go"], 0); err != nil {
			t.Fatalf("generated routing.go is not Go: %v", err)
		}
		goldenfile.Check(t, f, files["routing.go"], *update)
		ran = true
	}
	if !ran {
		t.Fatalf("case %s compiled but pins nothing: add warnings.txt, decisions.json, explain.args, catalog.txt or routing.go.want", name)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
