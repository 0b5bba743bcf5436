package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/policytest"
)

// TestExamplesCompile compiles the default policy and every example under
// policies/examples, without a warning, and runs each one's golden routing
// cases (tests/*.cue, what `pistrac test` runs): the examples are
// documentation, and documentation that does not compile, holds dead
// policy, or does not route as it says, is worse than none.
func TestExamplesCompile(t *testing.T) {
	dirs := []string{filepath.Join("..", "policies")}
	entries, err := os.ReadDir(filepath.Join("..", "policies", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("..", "policies", "examples", e.Name()))
		}
	}
	if len(dirs) < 7 {
		t.Fatalf("found %d policy directories, want the default policy and at least 6 examples", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			g, warns, err := compiler.CompileWithWarningsAt(dir, today)
			if err != nil {
				t.Fatalf("%s does not compile:\n%v", dir, err)
			}
			if len(warns) > 0 {
				t.Errorf("%s compiles with warnings:\n%v", dir, warns)
			}
			cases, err := policytest.Load(dir, g)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range policytest.Run(g, cases) {
				if !r.Pass() {
					t.Errorf("%s: %s: want %s, got %s %v", r.Case.Pos, r.Case.Name, policytest.Describe(r.Case.Want), r.GotText(), r.Err)
				}
			}
		})
	}
}
