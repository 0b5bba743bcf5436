package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pistra/pistra/compiler"
)

// TestExamplesCompile compiles the default policy and every example under
// policies/examples, without a warning, and runs an example's
// decisions.json when it has one: the examples are documentation, and
// documentation that does not compile (or holds dead policy) is worse
// than none.
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
			g, warns, err := compiler.CompileWithWarnings(dir)
			if err != nil {
				t.Fatalf("%s does not compile:\n%v", dir, err)
			}
			if len(warns) > 0 {
				t.Errorf("%s compiles with warnings:\n%v", dir, warns)
			}
			if f := filepath.Join(dir, "decisions.json"); exists(f) {
				runDecisions(t, g, f)
			}
		})
	}
}
