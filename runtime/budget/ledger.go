package budget

import "sync"

// Ledger is where budget spend and metered usage are kept beyond one
// node's memory: each node adds what it settled, and reads back what the
// whole cluster spent.
type Ledger interface {
	// Read fills totals[i] with the cluster-wide spend of keys[i]; a key
	// never written reads as 0.
	Read(keys []Key, totals []uint64) error
	// Add adds each delta's spend to its key's total and each usage
	// delta's counts to its row, as one write: both or neither.
	Add(deltas []Delta, usage []UsageDelta) error
	// Totals lists every bucket the ledger holds a total for that open
	// reports true of, with that total.
	Totals(open func(Key) bool) ([]Delta, error)
	// Usage lists the rows of the UTC day starting at day (Unix seconds).
	Usage(day int64) ([]UsageDelta, error)
}

// Delta is spend settled on one node and not yet in the ledger, or, read
// back, one bucket's cluster-wide total.
type Delta struct {
	Key   Key
	Spent uint64
}

// Memory is a Ledger in this process's memory: budgets are then per
// process, and a restart forgets them.
type Memory struct {
	mu     sync.Mutex
	totals map[Key]uint64
	usage  map[UsageKey]UsageCounts
}

var _ Ledger = (*Memory)(nil)

// NewMemory returns an empty in-memory ledger.
func NewMemory() *Memory { return &Memory{totals: map[Key]uint64{}, usage: map[UsageKey]UsageCounts{}} }

func (m *Memory) Read(keys []Key, totals []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range keys {
		totals[i] = m.totals[k]
	}
	return nil
}

func (m *Memory) Add(deltas []Delta, usage []UsageDelta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range deltas {
		m.totals[d.Key] = sat(m.totals[d.Key], d.Spent)
	}
	for _, d := range usage {
		m.usage[d.Key] = m.usage[d.Key].Plus(d.Counts)
	}
	return nil
}

func (m *Memory) Totals(open func(Key) bool) ([]Delta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return OpenTotals(m.totals, open), nil
}

func (m *Memory) Usage(day int64) ([]UsageDelta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return DayRows(m.usage, day), nil
}

// OpenTotals lists the totals of totals that open reports true of, for a
// Ledger's Totals.
func OpenTotals(totals map[Key]uint64, open func(Key) bool) []Delta {
	var out []Delta
	for k, n := range totals {
		if open(k) {
			out = append(out, Delta{Key: k, Spent: n})
		}
	}
	return out
}

// DayRows lists the rows of rows whose day is day, sorted, for a Ledger's
// Usage.
func DayRows(rows map[UsageKey]UsageCounts, day int64) []UsageDelta {
	var out []UsageDelta
	for k, c := range rows {
		if k.Day == day {
			out = append(out, UsageDelta{Key: k, Counts: c})
		}
	}
	SortUsage(out)
	return out
}
