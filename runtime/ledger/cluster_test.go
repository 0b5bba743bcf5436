package ledger

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/suspend"
)

// wantEverywhere checks that every live node reads totals of keys.
func (c *testCluster) wantEverywhere(keys []budget.Key, want []uint64) {
	c.t.Helper()
	c.converged()
	for _, tn := range c.live() {
		if got := read(c.t, tn, keys...); !slices.Equal(got, want) {
			c.t.Errorf("%s reads %v, want %v", tn.id, got, want)
		}
	}
}

func TestAddsOnEveryNodeConvergeOnEveryRead(t *testing.T) {
	c := newCluster(t, 3)
	c.leader()
	for i, tn := range c.nodes {
		mustAdd(t, tn, budget.Delta{Key: key("shared"), Spent: 10}, budget.Delta{Key: key(tn.id), Spent: uint64(i + 1)})
	}
	c.wantEverywhere([]budget.Key{key("shared"), key("n1"), key("n2"), key("n3")}, []uint64{30, 1, 2, 3})
}

func TestLeaderLossElectsAnotherAndAddsGoOn(t *testing.T) {
	c := newCluster(t, 3)
	old := c.leader()
	mustAdd(t, old, budget.Delta{Key: key("a"), Spent: 1})
	c.converged()
	term := old.Status(context.Background()).Term
	c.stop(old)

	l := c.leader()
	if l == old {
		t.Fatal("the stopped node still leads")
	}
	// What the raft gauges read: an election is a higher term, and the
	// leader has no last contact of its own.
	if st := l.Status(context.Background()); st.Term <= term || st.CommitIndex < st.AppliedIndex || st.LastContactMS != 0 {
		t.Errorf("new leader's status: term %d (old leader's %d), commit %d, applied %d, last contact %d ms",
			st.Term, term, st.CommitIndex, st.AppliedIndex, st.LastContactMS)
	}
	for _, tn := range c.live() {
		mustAdd(t, tn, budget.Delta{Key: key("a"), Spent: 10})
	}
	c.wantEverywhere([]budget.Key{key("a")}, []uint64{21})

	// The old leader, restarted on its directory with no peers given,
	// rejoins and catches up.
	c.restart(old)
	waitReady(t, old.Node)
	mustAdd(t, old, budget.Delta{Key: key("a"), Spent: 100})
	c.wantEverywhere([]budget.Key{key("a")}, []uint64{121})
}

// TestNoQuorumKeepsReadingAndLosesNoSpend leaves one node alone: its
// writes fail, within the apply timeout, while it reads its last known
// totals; when quorum is back, the spend it resends is counted once.
func TestNoQuorumKeepsReadingAndLosesNoSpend(t *testing.T) {
	c := newCluster(t, 3)
	mustAdd(t, c.leader(), budget.Delta{Key: key("a"), Spent: 5})
	c.converged()
	alone := c.followers()[0]
	var gone []*testNode
	for _, tn := range c.live() {
		if tn != alone {
			c.stop(tn)
			gone = append(gone, tn)
		}
	}

	start := time.Now()
	err := alone.Add([]budget.Delta{{Key: key("a"), Spent: 7}}, nil)
	if err == nil {
		t.Fatal("an add without quorum succeeded")
	}
	if d := time.Since(start); d > 2*alone.cfg.ApplyTimeout {
		t.Fatalf("an add without quorum took %s", d)
	}
	if got := read(t, alone, key("a")); got[0] != 5 {
		t.Fatalf("without quorum the node reads %v, want its last known [5]", got)
	}
	// Once its election timeout passes it knows no leader: its status
	// says so, and a write fails at once.
	waitObserved(t, []*Node{alone.Node}, func() bool { return alone.Status(context.Background()).Leader == "" })
	start = time.Now()
	if err := alone.SetSuspension(context.Background(), suspend.Suspension{Kind: suspend.KindKey, Name: "k"}); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("a write with no leader: %v, want ErrNoLeader", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("a write with no leader took %s", d)
	}

	for _, tn := range gone {
		c.restart(tn)
	}
	c.leader()
	// As budget does: the failed flush's spend, merged with what was
	// settled since.
	mustAdd(t, alone, budget.Delta{Key: key("a"), Spent: 7 + 1})
	c.wantEverywhere([]budget.Key{key("a")}, []uint64{13})
}

func TestSuspensionsReplicate(t *testing.T) {
	c := newCluster(t, 3)
	fs := c.followers()
	ctx := context.Background()
	if err := fs[0].SetSuspension(ctx, suspend.Suspension{Kind: suspend.KindProvider, Name: "openai", Reason: "incident 42"}); err != nil {
		t.Fatal(err)
	}
	if err := fs[0].SetSuspension(ctx, suspend.Suspension{Kind: suspend.KindKey, Name: "ci-bot", Reason: "leaked"}); err != nil {
		t.Fatal(err)
	}
	c.converged()
	for _, tn := range c.live() {
		s, ok := tn.Suspended(suspend.KindProvider, "openai")
		if !ok || s.Reason != "incident 42" || s.Node != fs[0].id || s.Since.IsZero() {
			t.Errorf("%s: openai suspension %+v, %v", tn.id, s, ok)
		}
		if list := tn.Suspensions(); len(list) != 2 || list[0].Kind != suspend.KindKey {
			t.Errorf("%s lists %+v", tn.id, list)
		}
	}
	if err := fs[1].ClearSuspension(ctx, suspend.KindProvider, "openai"); err != nil {
		t.Fatal(err)
	}
	c.converged()
	for _, tn := range c.live() {
		if _, ok := tn.Suspended(suspend.KindProvider, "openai"); ok {
			t.Errorf("%s still has the cleared suspension", tn.id)
		}
	}
	if err := fs[1].SetSuspension(ctx, suspend.Suspension{Kind: "model", Name: "x"}); err == nil {
		t.Error("a suspension of an unknown kind was set")
	}
}

// TestANodeIsReplaced removes a node gone for good and brings in a new
// one, with a new ID and an empty directory, that asks to join.
func TestANodeIsReplaced(t *testing.T) {
	c := newCluster(t, 3)
	mustAdd(t, c.leader(), budget.Delta{Key: key("a"), Spent: 5})
	dead := c.followers()[0]
	c.stop(dead)
	// On the leader the live nodes agree on: a follower asked right after
	// the stop can be between heartbeats and know no leader to forward to.
	if err := c.leader().Remove(context.Background(), dead.id); err != nil {
		t.Fatalf("remove: %v", err)
	}

	ln := listenLoopback(t, "127.0.0.1:0")
	repl := &testNode{id: "n4", addr: "localhost:" + portOf(ln), dir: t.TempDir()}
	c.open(repl, ln, Config{Join: []string{c.live()[0].addr}})
	c.nodes = append(c.nodes, repl)
	waitLeader(t, repl.Node, c.leader().Node)
	mustAdd(t, repl, budget.Delta{Key: key("a"), Spent: 1})
	c.wantEverywhere([]budget.Key{key("a")}, []uint64{6})

	st := repl.Status(context.Background())
	var ids []string
	for _, s := range st.Servers {
		ids = append(ids, s.ID)
		if !strings.HasPrefix(s.Addr, "localhost:") {
			t.Errorf("raft knows %s by %s, not the name it advertises", s.ID, s.Addr)
		}
	}
	want := slices.DeleteFunc([]string{"n1", "n2", "n3", "n4"}, func(id string) bool { return id == dead.id })
	if slices.Sort(ids); !slices.Equal(ids, want) || !st.Ready || st.Leader == "" {
		t.Fatalf("status after the replacement: %+v, want servers %v", st, want)
	}
}
