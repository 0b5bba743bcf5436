package ledger

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/ledger/cluster"
	"github.com/pistra/pistra/runtime/ledger/cluster/clustertest"
)

const (
	testSecret = "test-cluster-secret"
	// waitFor bounds every wait on raft in these tests.
	waitFor = 15 * time.Second
)

// quick shortens raft's timeouts so elections take a fraction of a
// second, with room left for a loaded two-core machine.
func quick(rc *raft.Config) {
	rc.HeartbeatTimeout = 300 * time.Millisecond
	rc.ElectionTimeout = 300 * time.Millisecond
	rc.LeaderLeaseTimeout = 200 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
}

// testCluster is n nodes on loopback, over mutual TLS, each advertised
// as localhost:port while bound on 127.0.0.1.
type testCluster struct {
	t     testing.TB
	ca    *clustertest.CA
	log   *clustertest.Log
	nodes []*testNode
}

type testNode struct {
	*Node
	id, addr, dir string
}

func newCluster(t testing.TB, size int) *testCluster {
	t.Helper()
	log, _ := clustertest.NewLog()
	c := &testCluster{t: t, ca: clustertest.NewCA(t, "cluster"), log: log}
	var peers []Peer
	lns := make([]net.Listener, size)
	for i := range size {
		lns[i] = listenLoopback(t, "127.0.0.1:0")
		tn := &testNode{id: fmt.Sprintf("n%d", i+1), addr: "localhost:" + portOf(lns[i]), dir: t.TempDir()}
		c.nodes = append(c.nodes, tn)
		peers = append(peers, Peer{ID: tn.id, Addr: tn.addr})
	}
	for i, tn := range c.nodes {
		c.open(tn, lns[i], Config{Peers: peers})
	}
	t.Cleanup(func() {
		for _, tn := range c.nodes {
			tn.Shutdown()
		}
		if t.Failed() {
			t.Logf("cluster log:\n%s", c.log.String())
		}
	})
	return c
}

func listenLoopback(t testing.TB, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// open starts tn on ln with cfg, filling in what every test node shares.
func (c *testCluster) open(tn *testNode, ln net.Listener, cfg Config) {
	c.t.Helper()
	c.openAs(tn, ln, c.ca.Credentials(c.t, "localhost"), cfg)
}

// openAs is open with creds for tn's certificate.
func (c *testCluster) openAs(tn *testNode, ln net.Listener, creds *cluster.Credentials, cfg Config) {
	c.t.Helper()
	logger := c.log.Logger().With("node", tn.id)
	l, err := cluster.New(ln, cluster.Options{Advertise: tn.addr, Credentials: creds, Logger: logger})
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.Dir, cfg.ID, cfg.Cluster, cfg.Secret, cfg.Logger, cfg.tune = tn.dir, tn.id, l, testSecret, logger, quick
	if tn.Node, err = Open(cfg); err != nil {
		c.t.Fatalf("open %s: %v", tn.id, err)
	}
}

// stop shuts tn down; restart brings it back on the same directory and
// address, with no peers: a node with state rejoins from its directory.
func (c *testCluster) stop(tn *testNode) {
	c.t.Helper()
	if err := tn.Shutdown(); err != nil {
		c.t.Fatalf("shutdown %s: %v", tn.id, err)
	}
}

func (c *testCluster) restart(tn *testNode) {
	c.t.Helper()
	_, port, _ := net.SplitHostPort(tn.addr)
	c.open(tn, listenLoopback(c.t, "127.0.0.1:"+port), Config{})
}

func (c *testCluster) live() []*testNode {
	return slices.DeleteFunc(slices.Clone(c.nodes), func(tn *testNode) bool { return tn.raft.State() == raft.Shutdown })
}

// leader waits until the live nodes agree on a leader.
func (c *testCluster) leader() *testNode {
	c.t.Helper()
	live := c.live()
	nodes := make([]*Node, len(live))
	for i, tn := range live {
		nodes[i] = tn.Node
	}
	l := waitLeader(c.t, nodes...)
	return live[slices.Index(nodes, l)]
}

// waitLeader waits until every one of nodes names the same leader, and
// that node leads.
func waitLeader(t testing.TB, nodes ...*Node) *Node {
	t.Helper()
	var l *Node
	waitObserved(t, nodes, func() bool {
		l = agreedLeader(nodes)
		return l != nil
	})
	return l
}

// waitObserved waits until cond holds, rechecking it on every leader
// observation of nodes rather than on a clock.
func waitObserved(t testing.TB, nodes []*Node, cond func() bool) {
	t.Helper()
	obs := make(chan raft.Observation, 64)
	for _, n := range nodes {
		o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
			_, ok := o.Data.(raft.LeaderObservation)
			return ok
		})
		n.raft.RegisterObserver(o)
		defer n.raft.DeregisterObserver(o)
	}
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	// Observers are registered before the first check, so any change
	// after it wakes the loop.
	for !cond() {
		select {
		case <-obs:
		case <-deadline.C:
			t.Fatalf("not observed on %d nodes within %s", len(nodes), waitFor)
		}
	}
}

func agreedLeader(nodes []*Node) *Node {
	var leader *Node
	_, want := nodes[0].raft.LeaderWithID()
	for _, n := range nodes {
		if _, id := n.raft.LeaderWithID(); id == "" || id != want {
			return nil
		}
		if n.raft.State() == raft.Leader {
			leader = n
		}
	}
	return leader
}

func (c *testCluster) followers() []*testNode {
	l := c.leader()
	return slices.DeleteFunc(c.live(), func(tn *testNode) bool { return tn == l })
}

// converged waits until every live node has applied what the leader has.
func (c *testCluster) converged() {
	c.t.Helper()
	target := c.leader().fsm.appliedIndex()
	for _, tn := range c.live() {
		waitApplied(c.t, tn.Node, target)
	}
}

func waitApplied(t testing.TB, n *Node, target uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := n.fsm.waitApplied(ctx, target); err != nil {
		t.Fatalf("%s applied %d, not %d, within %s", n.cfg.ID, n.fsm.appliedIndex(), target, waitFor)
	}
}

// waitReady waits for n's replica to hold what its directory did.
func waitReady(t testing.TB, n *Node) {
	t.Helper()
	select {
	case <-n.Ready():
	case <-time.After(waitFor):
		t.Fatalf("%s not ready within %s", n.cfg.ID, waitFor)
	}
}

func portOf(ln net.Listener) string { return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port) }

func key(bucket string) budget.Key {
	return budget.Key{Budget: "daily", Bucket: bucket, Window: 1_767_225_600}
}

func read(t testing.TB, l budget.Ledger, keys ...budget.Key) []uint64 {
	t.Helper()
	totals := make([]uint64, len(keys))
	if err := l.Read(keys, totals); err != nil {
		t.Fatal(err)
	}
	return totals
}
