package budget

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// UsageKey names one row of the usage ledger: one UTC day of one
// provider's traffic on one upstream model as served, under the grouping
// keys the provider's own usage API reports by (empty when the policy
// names none). Rows are kept whether or not a profile has budgets: they
// are what the metering saw, to be held against the provider's figures.
type UsageKey struct {
	// Day is the UTC day's midnight, Unix seconds.
	Day         int64
	Provider    string
	Model       string
	KeyID       string
	WorkspaceID string
}

// UsageCounts is what one row counts. Requests counts every settled
// answer that reported usage or was a 2xx; Estimated those of them that
// reported none (2xx, settled at the hold's estimate), whose tokens are
// therefore in none of the token classes. The token classes are the
// sums of what the answers reported, normalised as meter.Usage is: input
// includes cached input and cache creation, output includes reasoning.
type UsageCounts struct {
	Requests, Estimated                                  uint64
	Input, CachedInput, CacheCreation, Output, Reasoning uint64
}

// Plus is c with o added to it.
func (c UsageCounts) Plus(o UsageCounts) UsageCounts {
	return UsageCounts{
		Requests: sat(c.Requests, o.Requests), Estimated: sat(c.Estimated, o.Estimated),
		Input: sat(c.Input, o.Input), CachedInput: sat(c.CachedInput, o.CachedInput),
		CacheCreation: sat(c.CacheCreation, o.CacheCreation), Output: sat(c.Output, o.Output),
		Reasoning: sat(c.Reasoning, o.Reasoning),
	}
}

// Minus is c less o, each count floored at 0.
func (c UsageCounts) Minus(o UsageCounts) UsageCounts {
	sub := func(a, b uint64) uint64 { return a - min(a, b) }
	return UsageCounts{
		Requests: sub(c.Requests, o.Requests), Estimated: sub(c.Estimated, o.Estimated),
		Input: sub(c.Input, o.Input), CachedInput: sub(c.CachedInput, o.CachedInput),
		CacheCreation: sub(c.CacheCreation, o.CacheCreation), Output: sub(c.Output, o.Output),
		Reasoning: sub(c.Reasoning, o.Reasoning),
	}
}

// UsageDelta is usage settled on one node and not yet in the ledger, or,
// read back, one row's cluster-wide total.
type UsageDelta struct {
	Key    UsageKey
	Counts UsageCounts
}

// UsageRetention is how long the usage ledger keeps a day's rows: two
// months of days, time for a provider's usage API to settle and for a
// month to be reconciled after it closed. Older rows are compacted away.
const UsageRetention = 62 * 24 * time.Hour

// usageRow is one row's counts settled on this node since its last flush.
// Settlements add with atomics, so a request takes no lock once its row
// exists; a flush swaps each count out.
type usageRow struct {
	requests, estimated                                  atomic.Uint64
	input, cachedInput, cacheCreation, output, reasoning atomic.Uint64
}

func (r *usageRow) add(u *meter.Usage) {
	r.requests.Add(1)
	if !u.Reported {
		r.estimated.Add(1)
		return
	}
	r.input.Add(u.InputTokens)
	r.cachedInput.Add(u.CachedInputTokens)
	r.cacheCreation.Add(u.CacheCreationInputTokens)
	r.output.Add(u.OutputTokens)
	r.reasoning.Add(u.ReasoningTokens)
}

func (r *usageRow) take() UsageCounts {
	return UsageCounts{
		Requests: r.requests.Swap(0), Estimated: r.estimated.Swap(0),
		Input: r.input.Swap(0), CachedInput: r.cachedInput.Swap(0), CacheCreation: r.cacheCreation.Swap(0),
		Output: r.output.Swap(0), Reasoning: r.reasoning.Swap(0),
	}
}

// usageBook is this node's usage settled since the last flush, by row.
// A row stays in the map until its day is over and a flush found it
// empty, so a busy row costs its map entry once.
type usageBook struct {
	mu   sync.RWMutex
	rows map[UsageKey]*usageRow
	// pending is what a failed flush could not write: sent again with the
	// next. Only the flush touches it.
	pending map[UsageKey]UsageCounts
}

// usageKey is the row an answer served by model at provider counts in,
// settled at now.
func usageKey(provider, model string, api *plan.UsageAPI, now time.Time) UsageKey {
	k := UsageKey{Day: now.Unix() - now.Unix()%secondsPerDay, Provider: provider, Model: model}
	if api != nil {
		k.KeyID, k.WorkspaceID = api.KeyID, api.WorkspaceID
	}
	return k
}

// secondsPerDay: Unix time has no leap seconds, so a UTC day is exactly
// this long in it.
const secondsPerDay = 86400

// record counts one settled answer of usage u in row k.
func (b *usageBook) record(k UsageKey, u *meter.Usage) {
	b.mu.RLock()
	r := b.rows[k]
	b.mu.RUnlock()
	if r == nil {
		b.mu.Lock()
		if r = b.rows[k]; r == nil {
			r = &usageRow{}
			b.rows[k] = r
		}
		b.mu.Unlock()
	}
	r.add(u)
}

// collect appends to out what every row settled since the last flush,
// the pending rows of a failed flush merged in, and forgets the rows that
// had nothing left of days before yesterday: a settlement looks its row
// up the moment it computes its day, so none can still be on its way to
// a row a whole day old. Called only by the flush.
func (b *usageBook) collect(out []UsageDelta, now time.Time) []UsageDelta {
	old := now.Unix() - now.Unix()%secondsPerDay - secondsPerDay
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, r := range b.rows {
		c := r.take().Plus(b.pending[k])
		delete(b.pending, k)
		if c != (UsageCounts{}) {
			out = append(out, UsageDelta{Key: k, Counts: c})
		} else if k.Day < old {
			delete(b.rows, k)
		}
	}
	for k, c := range b.pending { // rows forgotten since their flush failed
		out = append(out, UsageDelta{Key: k, Counts: c})
	}
	clear(b.pending)
	return out
}

// keep holds ds for the next flush: the ledger did not take them.
func (b *usageBook) keep(ds []UsageDelta) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range ds {
		b.pending[d.Key] = b.pending[d.Key].Plus(d.Counts)
	}
}

// SortUsage orders rows by day, provider, model and grouping keys.
func SortUsage(rows []UsageDelta) {
	slices.SortFunc(rows, func(a, b UsageDelta) int {
		x, y := a.Key, b.Key
		return cmp.Or(cmp.Compare(x.Day, y.Day), strings.Compare(x.Provider, y.Provider), strings.Compare(x.Model, y.Model),
			strings.Compare(x.KeyID, y.KeyID), strings.Compare(x.WorkspaceID, y.WorkspaceID))
	})
}
