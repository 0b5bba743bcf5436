package main

import (
	"testing"

	"github.com/pistra/pistra/internal/testkit"
)

// servingOnly are what only pistrad needs, each a package and those below
// it: the HTTP server, the attempt loop and its upstream client, the
// ledger and the raft and bbolt it stores with, metrics. pistrac answers
// routing questions with the decision alone (runtime/route), so none of
// them may come back into its build.
var servingOnly = []string{
	testkit.Module + "/runtime/server",
	testkit.Module + "/runtime/proxy",
	testkit.Module + "/runtime/h1",
	testkit.Module + "/runtime/ledger",
	"github.com/hashicorp/raft",
	"go.etcd.io/bbolt",
	"github.com/prometheus",
}

// TestLinksNoServer holds pistrac to the decision without the server:
// listing its dependencies is enough.
func TestLinksNoServer(t *testing.T) {
	for _, p := range testkit.Deps(t, ".", testkit.Module+"/runtime/route") {
		for _, no := range servingOnly {
			if testkit.Under(p, no) {
				t.Errorf("pistrac links %s", p)
			}
		}
	}
}
