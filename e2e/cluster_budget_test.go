package e2e

import (
	"cmp"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/budget"
)

// TestClusterOverspendIsBounded drives one budget from all three nodes at
// once until every node refuses it, then holds the cluster's spend past
// the limit to a bound computed from the rates the clients measured.
func TestClusterOverspendIsBounded(t *testing.T) {
	// At the paced rate below (about 2,900 tokens a second a node) the
	// limit takes two to three seconds to reach: several flush intervals
	// of steady state before it, and a bound well below the limit.
	const limit = 20000
	const workers = 4
	c := newTestCluster(t, limit)
	leader := c.waitSettled(20 * time.Second)
	l := c.startLoad(workers, 25*time.Millisecond, func(*clusterNode) string { return keyCapped })
	drops := c.sampleSpend(l, "cluster-cap", "capped")
	c.waitRefusing(t, l)
	l.halt()

	var served uint64
	var refs []bucketRef
	for _, n := range c.nodes {
		sum, _ := l.byNode[n].tokens(l.start, time.Now())
		served += sum
		refs = append(refs, bucketRef{n, "cluster-cap", "capped"})
	}
	got := c.quiesce(t, refs...)
	for _, r := range refs {
		if got[r] != served {
			t.Errorf("%s counts %d spent, the clients were served %d", r.n.id, got[r], served)
		}
	}
	spent := got[refs[0]]
	if spent+clusterHold <= limit {
		t.Fatalf("spent %d of %d: every node refuses a budget with room for another request", spent, limit)
	}

	rates, cluster, others := c.rates(l)
	over := float64(spent) - limit
	interval := budget.FlushInterval.Seconds()
	t.Logf("limit %d, spent %d: over by %.0f; %.0f tokens/s (%v); %s leads", limit, spent, over, cluster, rates, leader.id)

	// A node learns of another's spend when the other has flushed it (at
	// its next tick, within one interval) and it has read it back, which
	// it does every budget.RefreshInterval from its own replica; then the
	// requests in flight when a node stops settle after it, one per client
	// at most. So the cluster may overspend by what the other nodes spend
	// in one interval, plus those in-flight requests.
	oneInterval := others * interval
	inFlight := float64(len(c.nodes)*workers) * float64(clusterHold)
	t.Logf("over by %.2f times what the other nodes spend in one interval (%.0f)", over/oneInterval, oneInterval)
	if over > oneInterval+inFlight {
		t.Errorf("over the limit by %.0f, more than the other nodes spend in one %s flush interval (%.0f) and the requests in flight (%.0f)",
			over, budget.FlushInterval, oneInterval, inFlight)
	}

	if d := drops(); len(d) > 0 {
		t.Errorf("a bucket's spent went down on a node while it served: %v", d)
	}
}

// waitRefusing waits until every node refuses and has been refusing for
// longer than any node's spend takes to reach every other (two flush
// intervals and a commit): then no node still admits on a stale total.
func (c *testCluster) waitRefusing(t *testing.T, l *load) {
	t.Helper()
	quiet := 2*budget.FlushInterval + 500*time.Millisecond
	poll(t, 40*time.Second, "every node to refuse the spent budget", func() (bool, string) {
		for _, n := range c.nodes {
			last := l.byNode[n].lastServed()
			s, r, f, e := l.byNode[n].counts()
			if f > 0 {
				t.Fatalf("%s: %d requests failed, e.g. %s", n.id, f, e)
			}
			if r == 0 || last.IsZero() || time.Since(last) < quiet {
				return false, fmt.Sprintf("%s: served %d, refused %d", n.id, s, r)
			}
		}
		return true, ""
	})
}

// rates are what each node served per second, the cluster's sum, and the
// most that all nodes but one served. A node's rate is the higher of its
// whole run's and its last second's before it stopped admitting: the
// load is paced, so the two agree unless the machine stalled, and then
// the higher is the one a bound must take.
func (c *testCluster) rates(l *load) (byNode map[string]float64, cluster, others float64) {
	byNode = map[string]float64{}
	for _, n := range c.nodes {
		nl := l.byNode[n]
		end := nl.lastServed().Add(time.Millisecond)
		byNode[n.id] = max(nl.rate(l.start, end), nl.rate(end.Add(-time.Second), end))
		cluster += byNode[n.id]
	}
	for _, r := range byNode {
		others = max(others, cluster-r)
	}
	return byNode, cluster, others
}

// sampleSpend reads budget's bucket name on every node every 10 ms while
// the load runs, and returns a function listing every reading lower than
// the one before it on the same node: spend only grows in a window, so each
// is a node that lost sight of spend it had counted.
func (c *testCluster) sampleSpend(l *load, budgetName, bucket string) func() []string {
	var mu sync.Mutex
	var drops []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		prev := map[*clusterNode]uint64{}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			for _, n := range c.nodes {
				b, ok, err := n.bucket(budgetName, bucket)
				if err != nil || !ok {
					continue
				}
				if b.Spent < prev[n] {
					mu.Lock()
					drops = append(drops, fmt.Sprintf("%s %d -> %d at +%s", n.id, prev[n], b.Spent, time.Since(l.start).Round(time.Millisecond)))
					mu.Unlock()
				}
				prev[n] = b.Spent
			}
		}
	}()
	return func() []string {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return drops
	}
}

// TestClusterKillsLoseAtMostAnInterval kills a follower and then the
// leader with SIGKILL while all three nodes serve, restarts each on its
// directory, and holds what the ledger lost to what each killed node
// served in its last flush interval. Each node's clients use a key of
// their own, so the per-key bucket of tally-node is exactly that node's
// spend, and the per-profile tally-shared is the cluster's.
func TestClusterKillsLoseAtMostAnInterval(t *testing.T) {
	const workers = 4
	c := newTestCluster(t, 1000)
	l := c.startLoad(workers, 25*time.Millisecond, func(n *clusterNode) string { return nodeKey(n.id) })
	leader := c.waitSettled(20 * time.Second)

	// A kill loses what the node settled since the last flush that
	// committed: one interval, and the flush in progress, whose write may
	// or may not have committed. 250 ms covers that write (a forward and
	// two fsyncs on a loaded two-core machine); each client's last answer
	// may have reached it unsettled, one request per worker.
	window := budget.FlushInterval + 250*time.Millisecond
	slack := uint64(workers) * clusterHold
	mayLose := map[*clusterNode]uint64{}
	role := map[*clusterNode]string{}
	killMidTraffic := func(n *clusterNode, as string) {
		t.Helper()
		// A second of steady traffic on every node first: two flushes
		// at least, so the node has something in the ledger to keep.
		c.waitServing(l, c.live(), time.Now(), 150)
		c.kill(t, n)
		role[n] = "killed as " + as
		last, _ := l.byNode[n].tokens(n.killedAt.Add(-window), n.killedAt)
		mayLose[n] = last + slack
		// The others go on serving while it is down.
		c.waitServing(l, c.live(), time.Now(), 20)
	}
	restart := func(n *clusterNode) {
		t.Helper()
		c.start(t, n)
		c.waitSettled(20 * time.Second)
		c.waitServing(l, c.nodes, time.Now(), 20)
	}

	follower := c.followers(leader)[0]
	killMidTraffic(follower, "a follower")
	restart(follower)
	leader = c.waitSettled(20 * time.Second)
	killMidTraffic(leader, "the leader")
	next := c.waitSettled(20 * time.Second)
	t.Logf("%s leads %s after %s was killed", next.id, time.Since(leader.killedAt).Round(10*time.Millisecond), leader.id)
	restart(leader)
	l.halt()

	c.checkCaughtUp(t)
	c.checkLosses(t, l, mayLose, slack, role)
}

// checkLosses compares, once everything is flushed, what the clients of
// each node were served with what the ledger has of that node's key:
// exactly that for a node never killed (its flushes that failed while
// the leader was gone were resent merged into later ones, each counted
// once), and no more than mayLose less for one killed. Every node,
// restarted or not, must read the cluster's total as the sum.
func (c *testCluster) checkLosses(t *testing.T, l *load, mayLose map[*clusterNode]uint64, slack uint64, role map[*clusterNode]string) {
	t.Helper()
	var refs []bucketRef
	for _, n := range c.nodes {
		refs = append(refs, bucketRef{n, "tally-node", "node-" + n.id}, bucketRef{n, "tally-shared", "tally"})
	}
	got := c.quiesce(t, refs...)
	var sum uint64
	for _, n := range c.nodes {
		spent := got[bucketRef{n, "tally-node", "node-" + n.id}]
		sum += spent
		served, _ := l.byNode[n].tokens(l.start, time.Now())
		s, _, f, e := l.byNode[n].counts()
		t.Logf("%s (%s): served %d tokens in %d requests (%d failed), the ledger has %d (lost %d; may lose %d)",
			n.id, cmp.Or(role[n], "never killed"), served, s, f, spent, int64(served)-int64(spent), mayLose[n])
		switch {
		case n.kills == 0 && (spent != served || f > 0):
			t.Errorf("%s was never killed: the ledger has %d of the %d it served (%d requests failed: %s)", n.id, spent, served, f, e)
		case n.kills > 0 && spent > served+slack:
			t.Errorf("%s: the ledger has %d, more than the %d it served", n.id, spent, served)
		case n.kills > 0 && served > spent+mayLose[n]:
			t.Errorf("%s: the ledger lost %d, more than it served in its last interval and flush (%d)", n.id, served-spent, mayLose[n])
		}
	}
	for _, n := range c.nodes {
		if shared := got[bucketRef{n, "tally-shared", "tally"}]; shared != sum {
			t.Errorf("%s: tally-shared %d, the nodes' own buckets add up to %d", n.id, shared, sum)
		}
	}
}

// checkCaughtUp waits until every node has applied what the leader had
// when it is called.
func (c *testCluster) checkCaughtUp(t *testing.T) {
	t.Helper()
	leader := c.waitSettled(20 * time.Second)
	st, err := leader.status()
	if err != nil {
		t.Fatal(err)
	}
	want := st.Ledger.AppliedIndex
	poll(t, 15*time.Second, fmt.Sprintf("every node to apply index %d", want), func() (bool, string) {
		for _, n := range c.nodes {
			st, err := n.status()
			if err != nil || st.Ledger.AppliedIndex < want {
				return false, fmt.Sprintf("%s: %+v %v", n.id, st.Ledger, err)
			}
		}
		return true, ""
	})
}
