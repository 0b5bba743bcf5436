package budget

import (
	"math"
	"sync"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Key names one bucket: a budget, whose bucket (a key's or a profile's
// name), and the window it counts, by its kind (a reload may change it)
// and its start in Unix seconds.
type Key struct {
	Budget, Bucket string
	Period         plan.Window
	Window         int64
}

// bucket is one budget's allowance for one key or profile in one window.
type bucket struct {
	key          Key
	start, reset time.Time

	mu sync.Mutex
	// limit is the budget's limit as of the last admission (a reload may
	// change it).
	limit uint64
	// durable is the cluster-wide total last read from the ledger;
	// flushing what this node is writing there now; unflushed what it
	// settled since; held its live holds.
	durable, flushing, unflushed, held uint64
	// dead is set when the gate forgot the bucket (its window over, and
	// nothing held or unflushed): a request that found it just before must
	// look again.
	dead bool
}

// used is what the bucket counts against its limit; b.mu must be held.
func (b *bucket) used() uint64 {
	return sat(sat(b.durable, b.flushing), sat(b.unflushed, b.held))
}

// take holds cost if it fits under limit and, while the ledger is
// degraded (share > 0), if what this node spends and holds on its own
// stays within share of limit: checked and held in one step, so two
// requests can never both take the last room. It reports false for a dead
// bucket, which the caller looks up again.
func (b *bucket) take(cost, limit uint64, share float64) (ok, alone bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead {
		return false, true
	}
	b.limit = limit
	if share > 0 && float64(sat(sat(b.flushing, b.unflushed), sat(b.held, cost))) > share*float64(limit) {
		return false, false
	}
	if cost > limit || b.used() > limit-cost {
		return false, true
	}
	b.held += cost
	return true, true
}

func (b *bucket) isDead() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dead
}

// settle replaces a hold of held with spent.
func (b *bucket) settle(held, spent uint64) {
	b.mu.Lock()
	b.held -= min(held, b.held)
	b.unflushed = sat(b.unflushed, spent)
	b.mu.Unlock()
}

// spend adds spent to the settled spend and reports whether the bucket is
// then past its limit.
func (b *bucket) spend(spent uint64) (over bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unflushed = sat(b.unflushed, spent)
	return b.used() > b.limit
}

// state is a consistent view of the bucket: spent is the cluster-wide
// total last read plus unflushed, this node's settled spend not yet read
// back in it.
type state struct {
	limit, spent, durable, unflushed, held uint64
}

func (b *bucket) state() state {
	b.mu.Lock()
	defer b.mu.Unlock()
	unflushed := sat(b.flushing, b.unflushed)
	return state{limit: b.limit, spent: sat(b.durable, unflushed), durable: b.durable, unflushed: unflushed, held: b.held}
}

// sat adds without wrapping: a budget's arithmetic must never make a full
// bucket look empty.
func sat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
