package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClusterReplacesANode follows the README's replacement of a node
// gone for good: it is removed through a member's internal endpoint (a
// cluster certificate and the secret), and a new node with a new name
// and an empty directory joins with -join; it then reads the spend the
// cluster had before it came.
func TestClusterReplacesANode(t *testing.T) {
	c := newTestCluster(t, 1000)
	leader := c.waitSettled(20 * time.Second)
	for _, n := range c.nodes {
		if a := n.chat(nodeKey(n.id)); !answered(a) {
			t.Fatalf("%s: %+v", n.id, a)
		}
	}
	var refs []bucketRef
	for _, n := range c.nodes {
		refs = append(refs, bucketRef{n, "tally-shared", "tally"})
	}
	before := c.quiesce(t, refs...)[refs[0]]

	fs := c.followers(leader)
	gone, via := fs[0], fs[1]
	c.kill(t, gone)
	// Sent to a follower, which passes it to the leader.
	member := c.ca.Credentials(t, "127.0.0.1").Cert
	body := fmt.Appendf(nil, `{"id":%q}`, gone.id)
	if code, err := c.postInternal(via.raft, removePath, &member, body); err != nil || code != http.StatusNoContent {
		t.Fatalf("remove %s through %s: %d %v", gone.id, via.id, code, err)
	}

	var joinVia []string
	for _, n := range c.live() {
		joinVia = append(joinVia, n.raft)
	}
	n4 := &clusterNode{id: "n4", raft: raftPorts(t, 1)[0], dir: t.TempDir(), client: &http.Client{Timeout: 10 * time.Second},
		extra: []string{"-join", strings.Join(joinVia, ",")}}
	n4.ca, n4.cert, n4.key = c.ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
	c.nodes = append(c.nodes, n4)
	c.start(t, n4)
	leader = c.waitSettled(20 * time.Second)

	var want []string
	for _, n := range c.live() {
		want = append(want, n.id)
	}
	for _, n := range c.live() {
		st, err := n.status()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range st.Ledger.Servers {
			ids = append(ids, s.ID)
		}
		if slices.Sort(ids); !slices.Equal(ids, want) {
			t.Errorf("%s lists members %v, want %v", n.id, ids, want)
		}
	}

	// The newcomer serves, and counts on the cluster's total from before
	// it came.
	a := n4.chat(nodeKey("n1"))
	if !answered(a) {
		t.Fatalf("n4: %+v", a)
	}
	refs = refs[:0]
	for _, n := range c.live() {
		refs = append(refs, bucketRef{n, "tally-shared", "tally"})
	}
	for r, spent := range c.quiesce(t, refs...) {
		if spent != before+a.tokens {
			t.Errorf("%s reads tally-shared %d, want %d before the replacement and %d since", r.n.id, spent, before, a.tokens)
		}
	}
	t.Logf("%s replaced by n4; %s leads", gone.id, leader.id)
}
