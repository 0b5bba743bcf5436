package budget

import (
	"fmt"
	"net/http"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// ticket is what one admission holds: an amount on each bucket of the
// profile's budgets, priced for one candidate. Tickets are pooled.
type ticket struct {
	g *Gate
	// open is false once the ticket is closed.
	open bool
	// flat is a call's ticket: its hold is the whole cost, and no usage
	// is reported to settle it with.
	flat bool
	// progs are the CEL programs of the request's policy.
	progs  *expr.Programs
	served expr.Served
	// usageAPI is the serving provider's grouping keys, for its usage row.
	usageAPI *plan.UsageAPI
	// session is set for a WebSocket session's ticket: it holds the
	// session's flat cost and takes its usage as it streams (Spend).
	session bool
	holds   []hold
}

type hold struct {
	bucket *bucket
	budget *plan.Budget
	amount uint64
}

var (
	_ admission.Ticket  = (*ticket)(nil)
	_ admission.Spender = (*ticket)(nil)
)

func (t *ticket) reset(r *admission.Request, c *plan.Candidate) {
	t.open, t.flat, t.progs = true, false, r.Programs
	p := &r.Graph.Providers[c.Provider]
	t.served, t.usageAPI = expr.Served{Model: c.Model, Backend: p.Name}, p.UsageAPI
	t.session = r.Route.Session()
	t.holds = t.holds[:0]
}

func (t *ticket) add(bk *bucket, b *plan.Budget, amount uint64) {
	t.holds = append(t.holds, hold{bucket: bk, budget: b, amount: amount})
}

// Release gives every hold back.
func (t *ticket) Release() { t.close(nil) }

// Settle replaces every hold with what the answer cost: the provider's
// figures when it reported usage; the hold itself when it answered 2xx
// and reported nothing, since letting spend that happened go free is the
// error that compounds; nothing when it never answered successfully. The
// same answers are counted in the usage ledger, a 2xx without usage as
// settled at the estimate.
func (t *ticket) Settle(o *admission.Outcome) {
	if t.open && o != nil && o.Model != "" {
		t.served.Model = o.Model // the row and a cost expression name what served
	}
	if t.open && !t.flat && o != nil && (o.Usage.Reported || o.Status/100 == 2) {
		t.g.usage.record(usageKey(t.served.Backend, t.served.Model, t.usageAPI, t.g.now()), &o.Usage)
	}
	t.close(o)
}

func (t *ticket) close(o *admission.Outcome) {
	if !t.open {
		return // closed already: a second close must not touch a reused ticket
	}
	for _, h := range t.holds {
		var spent uint64
		switch {
		case o == nil:
		case t.flat:
			if o.Status/100 == 2 {
				spent = h.amount
			}
		case t.session:
			// Its usage was spent as it streamed; an established session
			// owes its flat cost, as a call answered without usage does.
			if o.Status == http.StatusSwitchingProtocols {
				spent = h.amount
			}
		case o.Usage.Reported:
			c, err := t.cost(h.budget, o.Usage)
			if err != nil {
				c = h.amount // the expression failed on real figures: charge the hold
			}
			spent = c
		case o.Status/100 == 2:
			spent = h.amount
		}
		h.bucket.settle(h.amount, spent)
	}
	t.holds, t.open, t.progs, t.usageAPI = t.holds[:0], false, nil, nil
	t.g.tickets.Put(t)
}

// Spend takes what usage u costs on every bucket the ticket holds on, as
// settled spend (a session's turn is over once its usage is reported, so
// it is never given back), and refuses the rest of the session naming the
// first budget that u takes past its limit. A cost expression that fails
// on u charges nothing more: the session's flat cost is still held.
func (t *ticket) Spend(u *meter.Usage) *admission.Refusal {
	var over *admission.Refusal
	for _, h := range t.holds {
		c, err := t.cost(h.budget, *u)
		if err != nil || c == 0 {
			continue
		}
		if h.bucket.spend(c) && over == nil {
			over = spent(h.budget, h.bucket.reset)
		}
	}
	return over
}

// defaultOutput is the output a hold expects when the request states no
// limit.
const defaultOutput = 1024

// estimate is the usage a hold expects: the body's bytes over four for
// input, the request's stated output limit or defaultOutput for output.
// Both are crude on purpose; settlement replaces them with the provider's
// figures within the request's lifetime.
func estimate(r *admission.Request) meter.Usage {
	out := r.MaxOutput
	if out == 0 {
		out = defaultOutput
	}
	in := uint64(len(r.Body) / 4)
	return meter.Usage{InputTokens: in, OutputTokens: out, TotalTokens: sat(in, out), Reported: true}
}

// price is what b holds for the estimate u: an upper bound on what the
// request may be charged. The token subsets (cached input, cache writes,
// reasoning) are held at the count they are a subset of, their most; a
// CEL expression is evaluated with no subsets and with every subset at its
// most, and holds the larger, since it may charge a subset above or below
// the whole.
func (t *ticket) price(b *plan.Budget, u meter.Usage) (uint64, error) {
	switch b.CostType {
	case plan.CostCachedInputToken, plan.CostCacheCreationInputToken:
		return u.InputTokens, nil
	case plan.CostReasoningToken:
		return u.OutputTokens, nil
	case plan.CostCEL:
		none, err := t.cost(b, u)
		if err != nil {
			return 0, err
		}
		u.CachedInputTokens, u.CacheCreationInputTokens, u.ReasoningTokens = u.InputTokens, u.InputTokens, u.OutputTokens
		most, err := t.cost(b, u)
		return max(none, most), err
	}
	return t.cost(b, u)
}

// cost is what b charges for usage u on the candidate the ticket is for.
func (t *ticket) cost(b *plan.Budget, u meter.Usage) (uint64, error) {
	switch b.CostType {
	case plan.CostInputToken:
		return u.InputTokens, nil
	case plan.CostOutputToken:
		return u.OutputTokens, nil
	case plan.CostCachedInputToken:
		return u.CachedInputTokens, nil
	case plan.CostCacheCreationInputToken:
		return u.CacheCreationInputTokens, nil
	case plan.CostReasoningToken:
		return u.ReasoningTokens, nil
	case plan.CostCEL:
		c, err := t.progs.Cost(b.CostExpr, t.served, u)
		if err != nil {
			return 0, fmt.Errorf("cost expression: %w", err)
		}
		return c, nil
	}
	if u.TotalTokens == 0 {
		return sat(u.InputTokens, u.OutputTokens), nil
	}
	return u.TotalTokens, nil
}
