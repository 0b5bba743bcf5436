package main

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
)

const module = "github.com/pistra/pistra"

// servingOnly are what only pistrad needs, each a package and those below
// it: the HTTP server, the attempt loop and its upstream client, the
// ledger and the raft and bbolt it stores with, metrics. pistrac answers
// routing questions with the decision alone (runtime/route), so none of
// them may come back into its build.
var servingOnly = []string{
	module + "/runtime/server",
	module + "/runtime/proxy",
	module + "/runtime/h1",
	module + "/runtime/ledger",
	"github.com/hashicorp/raft",
	"go.etcd.io/bbolt",
	"github.com/prometheus",
}

// TestLinksNoServer holds pistrac to the decision without the server:
// listing its dependencies is enough.
func TestLinksNoServer(t *testing.T) {
	for _, p := range testkit.Deps(t, module+"/runtime/route") {
		for _, no := range servingOnly {
			if p == no || strings.HasPrefix(p, no+"/") {
				t.Errorf("pistrac links %s", p)
			}
		}
	}
}
