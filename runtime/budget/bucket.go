package budget

import (
	"math"
	"sync"
	"time"
)

// Key names one bucket: a budget, whose bucket (a key's or a profile's
// name), and the window it counts, by its start in Unix seconds.
type Key struct {
	Budget, Bucket string
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
}

// used is what the bucket counts against its limit; b.mu must be held.
func (b *bucket) used() uint64 {
	return sat(sat(b.durable, b.flushing), sat(b.unflushed, b.held))
}

// take holds cost if it fits under limit: checked and held in one step,
// so two requests can never both take the last room.
func (b *bucket) take(cost, limit uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limit = limit
	if cost > limit || b.used() > limit-cost {
		return false
	}
	b.held += cost
	return true
}

// fitsAlone reports whether cost fits in share of limit beside what this
// node has spent and holds on its own, beyond the ledger's last total.
func (b *bucket) fitsAlone(cost, limit uint64, share float64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	own := sat(sat(b.flushing, b.unflushed), sat(b.held, cost))
	return float64(own) <= share*float64(limit)
}

// settle replaces a hold of held with spent.
func (b *bucket) settle(held, spent uint64) {
	b.mu.Lock()
	b.held -= held
	b.unflushed = sat(b.unflushed, spent)
	b.mu.Unlock()
}

// state is a consistent view of the bucket.
type state struct {
	limit, spent, held uint64
}

func (b *bucket) state() state {
	b.mu.Lock()
	defer b.mu.Unlock()
	return state{limit: b.limit, spent: sat(sat(b.durable, b.flushing), b.unflushed), held: b.held}
}

// sat adds without wrapping: a budget's arithmetic must never make a full
// bucket look empty.
func sat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
