// Package budget holds token budgets: before a candidate is sent, a hold
// for what the request is expected to cost is taken on every bucket its
// profile draws on; when the answer is in, the hold is replaced by what the
// provider reported. A limit is checked and held in one step under the
// bucket's lock, so concurrent requests can never both take its last room,
// and long streams admitted together cannot overrun it: their expected
// cost is already held while they run.
//
// A bucket keeps three quantities: the cluster-wide total it last read
// from the Ledger, this node's settled spend not yet written there, and
// its live holds. Flush, every FlushInterval, writes the second to the
// ledger and re-reads the first, so a node learns what the others spent
// within one interval.
//
// The same settlements count what was metered in the usage ledger (per
// UTC day, provider, model as served and the provider's usage_api ids),
// flushed with the spend on the same tick: docs/usage.md.
package budget

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
)

// FlushInterval is how often spend is written to the ledger and the
// cluster-wide totals re-read: the bound on what a node does not yet know
// of its siblings' spend, and on what a crash loses.
const FlushInterval = 500 * time.Millisecond

// Refusal reasons, as pistra_failover_skipped_total and
// pistra_auth_failures_total label them.
const (
	ReasonExceeded = "budget_exceeded"
	ReasonError    = "budget_error"
)

// Gate admits candidates against the budgets of the request's profile. It
// implements admission.Gate and is safe for concurrent use.
type Gate struct {
	ledger  Ledger
	metrics *metrics.Metrics
	now     func() time.Time

	mu      sync.RWMutex
	buckets map[Key]*bucket

	// flushMu serializes flushes.
	flushMu   sync.Mutex
	keys      []Key
	totals    []uint64
	deltas    []Delta
	flushBufs []*bucket

	tickets sync.Pool

	// usage is this node's metered usage not yet flushed; usageOut the
	// flush's list of it.
	usage    usageBook
	usageOut []UsageDelta

	// flushedAt is when the last flush succeeded (Unix nanoseconds).
	flushedAt atomic.Int64
	// degraded is set while flushes fail: the ledger cannot take this
	// node's spend, and its totals have stopped moving.
	degraded atomic.Bool
	// degradedShare is the fraction of each limit this node may spend and
	// hold on its own while degraded.
	degradedShare float64
}

// DefaultDegradedShare is the fraction of a limit a node may spend on its
// own while its ledger has no quorum: enough to ride out an election, small
// enough that a partitioned cluster cannot spend a multiple of a limit.
const DefaultDegradedShare = 0.1

// SetDegradedShare sets the fraction of each limit this node may spend
// and hold on its own, beyond the last totals it read, while its flushes
// fail; past it, requests are refused budget_error until the ledger
// answers again. It is meant to be set once, before traffic.
func (g *Gate) SetDegradedShare(f float64) {
	if f >= 0 && f <= 1 {
		g.degradedShare = f
	}
}

var _ admission.Gate = (*Gate)(nil)

// New returns a gate keeping its totals in ledger. now is the clock
// (time.Now in pistrad); windows roll by it, in UTC.
func New(ledger Ledger, m *metrics.Metrics, now func() time.Time) *Gate {
	g := &Gate{ledger: ledger, metrics: m, now: now, buckets: map[Key]*bucket{}, degradedShare: DefaultDegradedShare,
		usage: usageBook{rows: map[UsageKey]*usageRow{}, pending: map[UsageKey]UsageCounts{}}}
	g.tickets.New = func() any { return &ticket{g: g} }
	return g
}

// Admit holds, on every budget of the request's profile, what candidate c
// is expected to cost, or refuses c naming the first budget without room.
// A profile without budgets holds nothing, but its ticket still counts
// the answer in the usage ledger when it settles.
func (g *Gate) Admit(r *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	gr := r.Graph
	prof := &gr.Profiles[r.Profile]
	now := g.now()
	t := g.tickets.Get().(*ticket)
	t.reset(r, c)
	for _, bi := range prof.Budgets {
		b := &gr.Budgets[bi]
		cost, err := b.CostPerSession, error(nil)
		if !t.session {
			cost, err = t.price(b, estimate(r))
		}
		if err != nil {
			t.Release()
			return nil, errorRefusal(b, err, false) // the policy's expression fails the same on a retry
		}
		if refusal := g.hold(t, r, b, cost, now); refusal != nil {
			t.Release()
			return nil, refusal
		}
	}
	return t, nil
}

// AdmitCall holds one call to svc (an MCP call, an A2A message or task
// read) on every budget bound to the profile's agent traffic: a flat
// cost, the agent's cost_per_call or the budget's. Settled with a 2xx
// outcome the hold is spent; released, or settled with any other, it is
// given back. It counts nothing in the usage ledger, which is of tokens.
func (g *Gate) AdmitCall(r *admission.Request, svc *plan.Service) (admission.Ticket, *admission.Refusal) {
	gr := r.Graph
	now := g.now()
	t := g.tickets.Get().(*ticket)
	t.open, t.flat, t.session, t.progs, t.holds = true, true, false, r.Programs, t.holds[:0]
	for _, bi := range gr.Profiles[r.Profile].AgentBudgets {
		b := &gr.Budgets[bi]
		if refusal := g.hold(t, r, b, svc.CostOf(b), now); refusal != nil {
			t.Release()
			return nil, refusal
		}
	}
	return t, nil
}

// hold takes cost on b's bucket for r into t.
func (g *Gate) hold(t *ticket, r *admission.Request, b *plan.Budget, cost uint64, now time.Time) *admission.Refusal {
	var share float64
	if g.degraded.Load() {
		share = g.degradedShare
	}
	for range 3 { // a bucket forgotten between lookup and hold is looked up again
		bk, err := g.bucket(b, bucketName(r, b), now)
		if err != nil {
			return errorRefusal(b, err, true)
		}
		ok, alone := bk.take(cost, b.Limit, share)
		switch {
		case ok:
			t.add(bk, b, cost)
			return nil
		case !alone:
			return errorRefusal(b, fmt.Errorf("%w: this node may spend %.0f%% of the limit on its own until the ledger answers",
				ErrLedger, g.degradedShare*100), true)
		case !bk.isDead():
			return exceeded(b, cost, bk.reset, now, t.flat)
		}
	}
	return errorRefusal(b, errors.New("its bucket kept being replaced"), true)
}

// exceeded is the refusal of a hold of cost on b, whose window resets at
// reset; call says the hold is a call's flat cost.
func exceeded(b *plan.Budget, cost uint64, reset, now time.Time, call bool) *admission.Refusal {
	why, unit := "has no room left for it", "tokens"
	switch {
	case call:
		// A call's cost is flat: the limit counts cost units, not tokens.
		why, unit = fmt.Sprintf("has no room left for a call (it costs %d)", cost), "units"
	case cost > b.Limit:
		why = fmt.Sprintf("cannot hold it at all: it is held at %d, more than the whole limit (set a lower max_tokens)", cost)
	}
	return &admission.Refusal{Reason: ReasonExceeded, Error: &dialect.Error{
		Status: http.StatusTooManyRequests, Code: dialect.CodeBudgetExceeded, RetryAfter: reset.Sub(now), Final: cost > b.Limit,
		Message: fmt.Sprintf("budget %q (%d %s per %s) %s; its window resets at %s",
			b.Name, b.Limit, unit, b.Window, why, reset.Format(time.RFC3339)),
	}}
}

// spent is the refusal of the rest of a session whose usage took b past
// its limit; its message is short enough to be a WebSocket close reason.
func spent(b *plan.Budget, reset time.Time) *admission.Refusal {
	return &admission.Refusal{Reason: ReasonExceeded, Final: true, Error: &dialect.Error{
		Status: http.StatusTooManyRequests, Code: dialect.CodeBudgetExceeded, Final: true,
		Message: fmt.Sprintf("budget %q is spent until %s", b.Name, reset.Format(time.RFC3339)),
	}}
}

// errorRefusal is the refusal of a hold on b that could not be checked.
// transient says a retry may find it checkable (the ledger answering
// again): x-should-retry: true. No retry-after is known: a ledger regains
// quorum when it does.
func errorRefusal(b *plan.Budget, err error, transient bool) *admission.Refusal {
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeBudgetError, "budget %q could not be checked: %v", b.Name, err)
	e.Transient = transient
	return &admission.Refusal{Reason: ReasonError, Error: e}
}

// bucketName is whose bucket of b the request draws on: its key's or its
// profile's.
func bucketName(r *admission.Request, b *plan.Budget) string {
	gr := r.Graph
	if b.Per == plan.PerProfile || r.Key < 0 {
		return gr.Profiles[r.Profile].Name
	}
	return gr.Keys[r.Key].Name
}

// ErrLedger wraps what the ledger said when a bucket's total could not be
// read.
var ErrLedger = errors.New("budget ledger unavailable")

// bucket returns b's bucket named name for the window now falls in,
// reading its cluster-wide total from the ledger when it is new here.
func (g *Gate) bucket(b *plan.Budget, name string, now time.Time) (*bucket, error) {
	start, reset := window(b.Window, now)
	k := Key{Budget: b.Name, Bucket: name, Period: b.Window, Window: start.Unix()}
	g.mu.RLock()
	bk := g.buckets[k]
	g.mu.RUnlock()
	if bk != nil {
		return bk, nil
	}
	var total [1]uint64
	if err := g.ledger.Read([]Key{k}, total[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLedger, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if bk = g.buckets[k]; bk == nil {
		bk = &bucket{key: k, start: start, reset: reset, limit: b.Limit, durable: total[0]}
		g.buckets[k] = bk
	}
	return bk, nil
}

// window is the window of kind w that t falls in, by wall clock in UTC.
func window(w plan.Window, t time.Time) (start, reset time.Time) {
	t = t.UTC()
	switch w {
	case plan.WindowMinute:
		start = t.Truncate(time.Minute)
		return start, start.Add(time.Minute)
	case plan.WindowHour:
		start = t.Truncate(time.Hour)
		return start, start.Add(time.Hour)
	case plan.WindowMonth:
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 0, 1)
}
