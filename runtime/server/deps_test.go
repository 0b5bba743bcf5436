package server

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
)

// TestLinksNoRaftLedger holds the HTTP front and the admin API to the
// interfaces they declare of a ledger: neither links the raft ledger,
// raft or its log store, which only pistrad's main wires in.
func TestLinksNoRaftLedger(t *testing.T) {
	for _, pkg := range []string{".", "../admin"} {
		for _, p := range testkit.Deps(t, pkg, testkit.Module+"/runtime/budget") {
			if testkit.Under(p, testkit.Module+"/runtime/ledger") || strings.HasPrefix(p, "github.com/hashicorp/raft") {
				t.Errorf("%s links %s", pkg, p)
			}
		}
	}
}
