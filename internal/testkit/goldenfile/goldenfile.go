// Package goldenfile compares test output with a checked-in want file. It
// imports nothing but the standard library, so that the tests of a fuzzed
// package (translate) can use it without fuzzing instrumenting more.
package goldenfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check compares got with the file at path or, with update (each package's
// -update flag), rewrites the file.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the lines that differ, enough to read a failure.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}
