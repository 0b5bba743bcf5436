package ledger

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/budget"
)

// FSM is the state raft replicates: the settled spend of every bucket per
// window, the usage ledger's rows per day, the suspensions, and per sending process what its last flush
// covered. Every replica applies the same entries in the same order to
// the same result: nothing in Apply reads a clock or a map's order.
type FSM struct {
	mu          sync.RWMutex
	totals      map[budget.Key]uint64
	usage       map[budget.UsageKey]budget.UsageCounts
	suspensions map[suspensionID]wireSuspension
	// suspGen moves, under mu, after every change of suspensions, so a
	// reader that sees it move sees the change.
	suspGen  atomic.Uint64
	sessions map[string]*session
	// index is the raft index of the last command applied; raft's own
	// applied index runs ahead of it, counting entries handed to the FSM
	// before they are applied. applied is closed and replaced when it
	// moves.
	index   uint64
	applied chan struct{}
}

// session is what the FSM remembers of one sender's flushes.
type session struct {
	last, base uint64 // the last applied batch's Seq and Base
	seen       int64  // its At
	// covered is what the last applied batch added up to since base: the
	// part of a resent batch that is already counted.
	covered      map[budget.Key]uint64
	coveredUsage map[budget.UsageKey]budget.UsageCounts
}

var _ raft.FSM = (*FSM)(nil)

func newFSM() *FSM {
	return &FSM{totals: map[budget.Key]uint64{}, usage: map[budget.UsageKey]budget.UsageCounts{}, suspensions: map[suspensionID]wireSuspension{}, sessions: map[string]*session{},
		applied: make(chan struct{})}
}

// Apply applies one committed entry. An entry that does not decode was
// refused before it was proposed, so it can only be one written by a
// newer binary: it is skipped, on every replica alike.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	c, err := decode(l.Data)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.advance(l.Index)
	switch {
	case c.Batch != nil:
		f.applyBatch(c.Batch)
	case c.Suspend != nil:
		f.suspensions[c.Suspend.id()] = *c.Suspend
		f.suspGen.Add(1)
	case c.Clear != nil:
		delete(f.suspensions, *c.Clear)
		f.suspGen.Add(1)
	case c.Compact != nil:
		f.compact(c.Compact)
	}
	return nil
}

// applyBatch adds b's spend exactly once. A flush can time out after the
// leader applied it; budget then sends the same spend again, merged into
// its next flush. So a batch carries everything its sender settled since
// the last flush it knows was applied (Base), and when a later one was
// applied after all, only what b holds beyond that one is new. A batch no
// later than the last one applied is a late copy and changes nothing.
func (f *FSM) applyBatch(b *batch) {
	s := f.sessions[b.Session]
	if s == nil {
		s = &session{}
		f.sessions[b.Session] = s
	}
	if b.Seq <= s.last {
		return
	}
	var counted map[budget.Key]uint64
	var countedUsage map[budget.UsageKey]budget.UsageCounts
	if s.last > b.Base && s.base == b.Base {
		counted, countedUsage = s.covered, s.coveredUsage
	}
	covered := make(map[budget.Key]uint64, len(b.Deltas))
	for _, d := range b.Deltas {
		k := d.key()
		covered[k] = sat(covered[k], d.Spent)
	}
	for k, n := range covered {
		f.totals[k] = sat(f.totals[k], n-min(n, counted[k]))
	}
	var coveredUsage map[budget.UsageKey]budget.UsageCounts
	if len(b.Usage) > 0 {
		coveredUsage = make(map[budget.UsageKey]budget.UsageCounts, len(b.Usage))
	}
	for _, u := range b.Usage {
		k := u.key()
		coveredUsage[k] = coveredUsage[k].Plus(u.counts())
	}
	for k, c := range coveredUsage {
		f.usage[k] = f.usage[k].Plus(c.Minus(countedUsage[k]))
	}
	s.last, s.base, s.seen, s.covered, s.coveredUsage = b.Seq, b.Base, b.At, covered, coveredUsage
}

// compact drops the totals of windows long over, the usage rows of days
// long over and the sessions long silent; see Retention and
// budget.UsageRetention.
func (f *FSM) compact(c *compaction) {
	maps.DeleteFunc(f.totals, func(k budget.Key, _ uint64) bool { return k.Window < c.Windows })
	maps.DeleteFunc(f.usage, func(k budget.UsageKey, _ budget.UsageCounts) bool { return k.Day < c.Usage })
	maps.DeleteFunc(f.sessions, func(_ string, s *session) bool { return s.seen < c.Sessions })
}

// advance records index as applied; f.mu must be held.
func (f *FSM) advance(index uint64) {
	f.index = index
	close(f.applied)
	f.applied = make(chan struct{})
}

// waitApplied waits until the command at index, or a later one, is
// applied, or ctx ends.
func (f *FSM) waitApplied(ctx context.Context, index uint64) error {
	for {
		f.mu.RLock()
		done, applied := f.index >= index, f.applied
		f.mu.RUnlock()
		if done {
			return nil
		}
		select {
		case <-applied:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *FSM) appliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.index
}

func (f *FSM) read(keys []budget.Key, totals []uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for i, k := range keys {
		totals[i] = f.totals[k]
	}
}

func (f *FSM) openTotals(open func(budget.Key) bool) []budget.Delta {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return budget.OpenTotals(f.totals, open)
}

func (f *FSM) dayUsage(day int64) []budget.UsageDelta {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return budget.DayRows(f.usage, day)
}

func (f *FSM) suspended(id suspensionID) (wireSuspension, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, ok := f.suspensions[id]
	return s, ok
}

func (f *FSM) listSuspensions() []wireSuspension {
	f.mu.RLock()
	out := slices.Collect(maps.Values(f.suspensions))
	f.mu.RUnlock()
	sortSuspensions(out)
	return out
}

// sat adds without wrapping: a total that wrapped would make a spent
// budget look empty.
func sat(a, b uint64) uint64 { return a + min(b, math.MaxUint64-a) }
