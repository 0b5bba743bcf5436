package budget

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// BucketReport is one bucket's exact figures.
type BucketReport struct {
	Budget      string    `json:"budget"`
	Bucket      string    `json:"bucket"`
	WindowStart time.Time `json:"window_start"`
	Reset       time.Time `json:"reset"`
	// Limit is the budget's limit as this node last admitted against it,
	// or as the serving policy declares it for a bucket this node has not
	// served; 0 for one of a budget the policy no longer declares.
	Limit uint64 `json:"limit"`
	// Spent is settled spend: Cluster plus Unflushed.
	Spent uint64 `json:"spent"`
	// Cluster is the cluster-wide total the ledger holds, as this node
	// last read it; Unflushed this node's settled spend not yet in it.
	Cluster   uint64 `json:"cluster"`
	Unflushed uint64 `json:"unflushed"`
	// Held is this node's live holds.
	Held uint64 `json:"held"`
}

// Report lists every bucket this node has open, including those of
// budgets a reload removed that still drain, and every bucket of an open
// window the ledger holds a total for, which this node may never have
// served (or not since it restarted), sorted. gr, the serving graph,
// gives the limits of the latter.
func (g *Gate) Report(gr *plan.Graph) ([]BucketReport, error) {
	now := g.now()
	held, err := g.ledger.Totals(func(k Key) bool {
		_, reset := window(k.Period, time.Unix(k.Window, 0))
		return now.Before(reset)
	})
	if err != nil {
		return nil, fmt.Errorf("budget report: %w", err)
	}
	g.mu.RLock()
	out := make([]BucketReport, 0, len(g.buckets)+len(held))
	for _, bk := range g.buckets {
		s := bk.state()
		out = append(out, BucketReport{Budget: bk.key.Budget, Bucket: bk.key.Bucket, WindowStart: bk.start,
			Reset: bk.reset, Limit: s.limit, Spent: s.spent, Cluster: s.durable, Unflushed: s.unflushed, Held: s.held})
	}
	for _, d := range held {
		if _, here := g.buckets[d.Key]; here {
			continue
		}
		start, reset := window(d.Key.Period, time.Unix(d.Key.Window, 0))
		out = append(out, BucketReport{Budget: d.Key.Budget, Bucket: d.Key.Bucket, WindowStart: start, Reset: reset,
			Limit: limitOf(gr, d.Key), Spent: d.Spent, Cluster: d.Spent})
	}
	g.mu.RUnlock()
	slices.SortFunc(out, func(a, b BucketReport) int {
		return cmp.Or(strings.Compare(a.Budget, b.Budget), strings.Compare(a.Bucket, b.Bucket), a.WindowStart.Compare(b.WindowStart))
	})
	return out, nil
}

// limitOf is the limit gr declares for k's budget, when it declares that
// budget with k's window; 0 otherwise.
func limitOf(gr *plan.Graph, k Key) uint64 {
	if gr == nil {
		return 0
	}
	for i := range gr.Budgets {
		if b := &gr.Budgets[i]; b.Name == k.Budget && b.Window == k.Period {
			return b.Limit
		}
	}
	return 0
}

// Usage lists the usage ledger's rows of the UTC day that starts at day
// (Unix seconds): what every node had flushed, the last flush interval
// of each not yet in them.
func (g *Gate) Usage(day int64) ([]UsageDelta, error) {
	rows, err := g.ledger.Usage(day)
	if err != nil {
		return nil, fmt.Errorf("usage report: %w", err)
	}
	return rows, nil
}
