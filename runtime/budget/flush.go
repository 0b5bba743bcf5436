package budget

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// RefreshInterval is how often, between flushes, the cluster-wide totals
// are re-read. A ledger's reads are its local replica, so this is cheap,
// and it lets a node learn a sibling's flush within a fraction of an
// interval instead of at its own next flush.
const RefreshInterval = 100 * time.Millisecond

// Run flushes every FlushInterval, and refreshes the totals every
// RefreshInterval between, until ctx ends; then it flushes once more, so
// what was settled before a clean stop reaches the ledger.
func (g *Gate) Run(ctx context.Context) {
	t := time.NewTicker(RefreshInterval)
	defer t.Stop()
	perFlush := int(FlushInterval / RefreshInterval)
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			_ = g.Flush()
			return
		case <-t.C:
			if tick%perFlush == 0 {
				_ = g.Flush() // a failed flush keeps its spend for the next
			} else {
				_ = g.Refresh()
			}
		}
	}
}

// Refresh re-reads every open bucket's cluster-wide total, writing
// nothing. A total only grows within its window, so a replica that lags
// a moment never lowers what a bucket counts.
func (g *Gate) Refresh() error {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	g.flushBufs, g.keys = g.flushBufs[:0], g.keys[:0]
	g.mu.RLock()
	for _, bk := range g.buckets {
		g.flushBufs = append(g.flushBufs, bk)
		g.keys = append(g.keys, bk.key)
	}
	g.mu.RUnlock()
	g.totals = slices.Grow(g.totals[:0], len(g.keys))[:len(g.keys)]
	if err := g.ledger.Read(g.keys, g.totals); err != nil {
		return fmt.Errorf("budget refresh: %w", err)
	}
	for i, bk := range g.flushBufs {
		bk.mu.Lock()
		bk.durable = max(bk.durable, g.totals[i])
		bk.mu.Unlock()
	}
	return nil
}

// Flush writes the spend settled since the last flush to the ledger,
// re-reads every open bucket's cluster-wide total, drops buckets whose
// window is over and that hold nothing, and republishes the budget
// metrics. On a ledger error the spend stays unflushed for the next try.
func (g *Gate) Flush() error {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	err := g.flush()
	g.degraded.Store(err != nil || !g.writable())
	g.publish() // every tick, the degraded ones above all
	return err
}

func (g *Gate) flush() error {
	g.collect()
	if err := g.write(); err != nil {
		return err
	}
	if err := g.ledger.Read(g.keys, g.totals); err != nil {
		return fmt.Errorf("budget flush: read: %w", err)
	}
	for i, bk := range g.flushBufs {
		bk.mu.Lock()
		bk.durable, bk.flushing = g.totals[i], 0
		bk.mu.Unlock()
	}
	g.sweep()
	g.flushedAt.Store(g.now().UnixNano())
	return nil
}

// Prober is a Ledger that can say whether it would take a write now,
// without one: a flush with nothing to write still learns the ledger lost
// its quorum.
type Prober interface{ Writable() bool }

func (g *Gate) writable() bool {
	p, ok := g.ledger.(Prober)
	return !ok || p.Writable()
}

// Degraded reports whether the last flush failed: the ledger cannot take
// this node's spend, which it holds on its own share of each limit.
func (g *Gate) Degraded() bool { return g.degraded.Load() }

// LastFlush is when spend last reached the ledger and totals were last
// read back; the zero time before the first flush.
func (g *Gate) LastFlush() time.Time {
	if n := g.flushedAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// collect lists the open buckets and moves each one's unflushed spend to
// flushing, where it is still counted until the ledger has it, and takes
// the usage settled since the last flush.
func (g *Gate) collect() {
	g.usageOut = g.usage.collect(g.usageOut[:0], g.now())
	g.flushBufs, g.keys, g.deltas = g.flushBufs[:0], g.keys[:0], g.deltas[:0]
	g.mu.RLock()
	for _, bk := range g.buckets {
		g.flushBufs = append(g.flushBufs, bk)
	}
	g.mu.RUnlock()
	for _, bk := range g.flushBufs {
		bk.mu.Lock()
		bk.flushing = sat(bk.flushing, bk.unflushed)
		if bk.unflushed > 0 {
			g.deltas = append(g.deltas, Delta{Key: bk.key, Spent: bk.unflushed})
		}
		bk.unflushed = 0
		bk.mu.Unlock()
		g.keys = append(g.keys, bk.key)
	}
	g.totals = slices.Grow(g.totals[:0], len(g.keys))[:len(g.keys)]
}

// write adds the collected deltas and usage to the ledger, or on failure
// puts them back as unflushed.
func (g *Gate) write() error {
	if len(g.deltas) == 0 && len(g.usageOut) == 0 {
		return nil
	}
	if err := g.ledger.Add(g.deltas, g.usageOut); err != nil {
		g.usage.keep(g.usageOut)
		for _, bk := range g.flushBufs {
			bk.mu.Lock()
			bk.unflushed, bk.flushing = sat(bk.unflushed, bk.flushing), 0
			bk.mu.Unlock()
		}
		return fmt.Errorf("budget flush: write: %w", err)
	}
	return nil
}

// sweep forgets buckets whose window is over and that hold nothing more:
// their spend is in the ledger. Each is marked dead under its own lock, so
// a request that found it a moment before looks again rather than holding
// on a bucket no flush will see; the gate's map is locked only to delete.
func (g *Gate) sweep() {
	now := g.now()
	var gone []Key
	for _, bk := range g.flushBufs {
		bk.mu.Lock()
		if bk.held == 0 && bk.unflushed == 0 && bk.flushing == 0 && !now.Before(bk.reset) {
			bk.dead = true
			gone = append(gone, bk.key)
		}
		bk.mu.Unlock()
	}
	if len(gone) == 0 {
		return
	}
	g.mu.Lock()
	for _, k := range gone {
		delete(g.buckets, k)
	}
	g.mu.Unlock()
}

// publish sets pistra_budget_used_ratio to each budget's fullest bucket of
// the current window and counts its buckets under and over their limit.
func (g *Gate) publish() {
	if g.metrics == nil {
		return
	}
	type view struct {
		worst       float64
		under, over int
	}
	now := g.now()
	views := map[string]*view{}
	for _, bk := range g.flushBufs {
		if now.Before(bk.start) || !now.Before(bk.reset) {
			continue // a bucket still draining from a window that is over
		}
		s := bk.state()
		v := views[bk.key.Budget]
		if v == nil {
			v = &view{}
			views[bk.key.Budget] = v
		}
		used := sat(s.spent, s.held)
		if s.limit > 0 {
			v.worst = max(v.worst, float64(used)/float64(s.limit))
		}
		if used >= s.limit {
			v.over++
		} else {
			v.under++
		}
	}
	g.metrics.ResetBudgets()
	for name, v := range views {
		g.metrics.Budget(name, v.worst, v.under, v.over)
	}
}
