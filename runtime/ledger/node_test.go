package ledger

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/ledger/cluster/clustertest"
)

// openSingle opens a lone node on dir, with no network.
func openSingle(t testing.TB, dir string, tune func(*raft.Config)) *testNode {
	t.Helper()
	log, logger := clustertest.NewLog()
	n, err := Open(Config{Dir: dir, Logger: logger, tune: tune})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Shutdown()
		if t.Failed() {
			t.Logf("log of %s:\n%s", dir, log.String())
		}
	})
	waitReady(t, n)
	waitLeader(t, n)
	return &testNode{Node: n, id: "local", dir: dir}
}

// mustAdd adds deltas on n as budget's flush would: a failed Add is sent
// again once n knows a leader, which the ledger must count once. A
// leadership change between a test's wait for a leader and its Add is
// then no failure, and the totals the test wants prove the resend was
// not counted twice.
func mustAdd(t testing.TB, n *testNode, deltas ...budget.Delta) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		err := n.Add(deltas, nil)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("add on %s: %v", n.id, err)
		}
		t.Logf("add on %s: %v; again once it knows a leader", n.id, err)
		waitObserved(t, []*Node{n.Node}, func() bool { _, id := n.raft.LeaderWithID(); return id != "" })
	}
}

func TestSingleNodeKeepsItsTotalsAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	n := openSingle(t, dir, quick)
	mustAdd(t, n, budget.Delta{Key: key("alice"), Spent: 40}, budget.Delta{Key: key("bob"), Spent: 2})
	mustAdd(t, n, budget.Delta{Key: key("alice"), Spent: 2})
	if got := read(t, n, key("alice"), key("bob"), key("carol")); got[0] != 42 || got[1] != 2 || got[2] != 0 {
		t.Fatalf("totals %v, want [42 2 0]", got)
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}

	n = openSingle(t, dir, quick)
	if got := read(t, n, key("alice"), key("bob")); got[0] != 42 || got[1] != 2 {
		t.Fatalf("after a restart totals %v, want [42 2]", got)
	}
	mustAdd(t, n, budget.Delta{Key: key("bob"), Spent: 1})
	if got := read(t, n, key("bob")); got[0] != 3 {
		t.Fatalf("an add after the restart: %v, want [3]", got)
	}
}

// TestRestartFromASnapshot forces a snapshot, which with few trailing
// logs compacts the log away, and restarts: the totals before it can
// only come back from the snapshot, those after it from the log.
func TestRestartFromASnapshot(t *testing.T) {
	dir := t.TempDir()
	tune := func(rc *raft.Config) {
		quick(rc)
		rc.TrailingLogs = 1
	}
	n := openSingle(t, dir, tune)
	for range 5 {
		mustAdd(t, n, budget.Delta{Key: key("alice"), Spent: 10})
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	first, err := n.store.FirstIndex()
	if err != nil || first < 5 {
		t.Fatalf("the log was not compacted behind the snapshot: first index %d, %v", first, err)
	}
	mustAdd(t, n, budget.Delta{Key: key("alice"), Spent: 1})
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots in the directory: %v", snaps)
	}

	n = openSingle(t, dir, tune)
	if got := read(t, n, key("alice")); got[0] != 51 {
		t.Fatalf("after restoring the snapshot and the log after it: %v, want [51]", got)
	}
}

func TestCompactionDropsWindowsPastRetention(t *testing.T) {
	n := openSingle(t, t.TempDir(), quick)
	now := time.Now()
	old := budget.Key{Budget: "monthly", Bucket: "a", Window: now.Add(-Retention - time.Hour).Unix()}
	kept := budget.Key{Budget: "monthly", Bucket: "a", Window: now.Add(-Retention + time.Hour).Unix()}
	mustAdd(t, n, budget.Delta{Key: old, Spent: 1}, budget.Delta{Key: kept, Spent: 2})
	if err := n.compact(now); err != nil {
		t.Fatal(err)
	}
	if got := read(t, n, old, kept); got[0] != 0 || got[1] != 2 {
		t.Fatalf("after compaction %v, want [0 2]", got)
	}
}

func TestADirectoryInUseIsRefused(t *testing.T) {
	dir := t.TempDir()
	openSingle(t, dir, quick)
	if n, err := Open(Config{Dir: dir}); err == nil {
		n.Shutdown()
		t.Fatal("a second node opened a directory in use")
	}
}

func TestConfigIsChecked(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no data directory"},
		{Config{Dir: "d", Peers: []Peer{{"a", "x:1"}}}, "need a cluster port"},
	}
	for _, c := range cases {
		if _, err := Open(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v): %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := ParsePeers("n1=a:1,n2"); err == nil {
		t.Error("a peer without an address parsed")
	}
	if p, err := ParsePeers("n1=a:1, n2=b:2"); err != nil || len(p) != 2 || p[1] != (Peer{"n2", "b:2"}) {
		t.Errorf("ParsePeers: %v, %v", p, err)
	}
}
