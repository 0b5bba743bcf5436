package goldenfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder keeps the error a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "want.txt")
	Check(t, path, []byte("a\nb\n"), true)
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("update wrote %q, %v", b, err)
	}
	r := &recorder{TB: t}
	Check(r, path, []byte("a\nb\n"), false)
	if len(r.errs) != 0 {
		t.Fatalf("equal output reported: %v", r.errs)
	}
	Check(r, path, []byte("a\nc\n"), false)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "- b\n+ c\n") || strings.Contains(r.errs[0], "- a") {
		t.Fatalf("differing output reported as %q", r.errs)
	}
}
