package budget

import "sync"

// Ledger is where budget spend is kept beyond one node's memory: each node
// adds what it settled, and reads back what the whole cluster spent.
type Ledger interface {
	// Read fills totals[i] with the cluster-wide spend of keys[i]; a key
	// never written reads as 0.
	Read(keys []Key, totals []uint64) error
	// Add adds each delta's spend to its key's total.
	Add(deltas []Delta) error
}

// Delta is spend settled on one node and not yet in the ledger.
type Delta struct {
	Key   Key
	Spent uint64
}

// Memory is a Ledger in this process's memory: budgets are then per
// process, and a restart forgets them.
type Memory struct {
	mu     sync.Mutex
	totals map[Key]uint64
}

var _ Ledger = (*Memory)(nil)

// NewMemory returns an empty in-memory ledger.
func NewMemory() *Memory { return &Memory{totals: map[Key]uint64{}} }

func (m *Memory) Read(keys []Key, totals []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range keys {
		totals[i] = m.totals[k]
	}
	return nil
}

func (m *Memory) Add(deltas []Delta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range deltas {
		m.totals[d.Key] = sat(m.totals[d.Key], d.Spent)
	}
	return nil
}
