package explain

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/pistra/pistra/internal/testkit/goldenfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name+".golden"), []byte(got), *update)
}
