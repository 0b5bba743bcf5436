package proxy

import (
	"cmp"
	"slices"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

// loop is the attempt loop's state for one request.
type loop struct {
	// moveOn is the primary provider's failover policy, which governs the
	// whole request; gate admits each candidate.
	moveOn upstream.Classes
	gate   admission.Gate
	// last is the last attempt sent, nil until one is; held what the gate
	// took for the candidate being tried.
	last *attempt
	held admission.Ticket
	// refused is the first refusal met, answered when nothing is sent;
	// final a refusal of the whole request, answered at once.
	refused, final *dialect.Error
	// passed is how far into the primary's failover.to the request went.
	passed int
	// member is the pick of the pooled candidate being tried; nil until a
	// pooled candidate is, so a request that is not pooled carries none.
	member *member
}

// try takes candidate ci: readied, admitted, then sent with its retries.
// It reports whether the loop goes on to the next candidate.
func (p *Proxy) try(x *Exchange, l *loop, ci int) bool {
	c := &x.Candidates[ci]
	up := &x.Upstreams[c.Provider]
	if ok, e := p.Prepare(x, c); !ok {
		p.passOver(x, l, c, prepareReason(e), e)
		return true
	}
	if l.last != nil && !l.moveOn.Has(l.last.class.failure()) {
		return false
	}
	l.release() // the abandoned candidate's claim, before the next is priced
	l.member.end()
	t, no := l.gate.Admit(&x.Admission, c)
	if no != nil && no.Final && l.last == nil {
		l.final = no.Error
		return false
	}
	if no != nil {
		p.passOver(x, l, c, no.Reason, no.Error)
		return true
	}
	l.held = t
	if up.Pooled(c) {
		if c, no = p.pickMember(x, l, c, up); no != nil {
			l.release()
			p.passOver(x, l, &x.Candidates[ci], no.Reason, no.Error)
			return true
		}
	}
	if !c.Primary {
		p.countPassedSkips(x, &l.passed, c.Provider)
	}
	if l.last != nil {
		if l.last.up != up {
			p.Metrics.Failover(l.last.up.Name, up.Name, l.last.class.String())
			x.Record.Failover = true
		}
		l.last.discard()
	}
	l.last = p.tryCandidate(x, l, ci, c, up)
	x.Record.Tried, x.Record.Origin = c, c.Origin
	return l.last.class != classNone && l.last.class != classCanceled
}

// passOver passes candidate c over untried for reason (e the refusal,
// when there is one): counted, and kept for the answer when nothing is
// sent.
func (p *Proxy) passOver(x *Exchange, l *loop, c *plan.Candidate, reason string, e *dialect.Error) {
	p.Metrics.FailoverSkipped(x.Upstreams[c.Provider].Name, reason)
	x.Trace.Skip(x.Upstreams[c.Provider].Name, reason, false)
	l.refused = cmp.Or(l.refused, e)
	x.passedOver(c, reason, e)
}

// conclude ends the request the one way the loop left it: refused whole,
// nothing sent, a good answer relayed, a client that left, or the last
// failure answered.
func (p *Proxy) conclude(x *Exchange, l *loop) {
	res := x.Record
	if l.final == nil && (l.last == nil || l.last.movesOn(l.moveOn)) && len(x.Order) > 0 {
		// The request went past the end of its candidates, and so past
		// every provider the plan ruled out after the last of them.
		p.countPassedSkips(x, &l.passed, -1)
	}
	switch {
	case l.final != nil:
		p.answer(x, res, l.final)
	case l.last == nil:
		p.answer(x, res, x.withWalk(cmp.Or(l.refused, Unservable(x.Body.Requested()))))
	case l.last.class == classNone:
		l.member.commit(x, l.last.resp.StatusCode)
		p.relay(x, l.last, res)
	case l.last.class == classCanceled:
		l.last.discard()
		clientLeftFirst(res, l.last.err, false)
	default:
		p.answerFailure(x, l)
	}
}

// closeClaim closes what the gate took, exactly once: settled on the
// answer, once one went out (on what was seen of it, even when a panic
// cut the relay short), else given back.
func (l *loop) closeClaim(x *Exchange) {
	l.member.end() // the picker hears the request is over, whatever happened
	if x.Record.Served == nil {
		l.release()
		return
	}
	held := l.held
	if held == nil {
		return
	}
	l.held = nil // forgotten first: a panic inside Settle must not close it twice
	x.outcome = settlement(x.Record)
	held.Settle(&x.outcome)
}

// settlement is what a claim is settled on: the served upstream answer's
// status (the client may have been sent another, or have left) and the
// usage the relay recorded.
func settlement(res *record.Record) admission.Outcome {
	return admission.Outcome{Status: res.UpstreamStatus, Usage: res.Usage, Model: res.Served.Model}
}

// release gives back what the gate took, if anything, and forgets it, so
// nothing is closed twice.
func (l *loop) release() {
	if held := l.held; held != nil {
		l.held = nil
		held.Release()
	}
}

// movesOn reports whether a failed attempt would move the request on to
// the next candidate under the failover policy moveOn.
func (a *attempt) movesOn(moveOn upstream.Classes) bool {
	return a.class != classNone && a.class != classCanceled && moveOn.Has(a.class.failure())
}

// countPassedSkips counts, in pistra_failover_skipped_total, the failover
// providers the plan ruled out at build time that the request has now gone
// past on its way to provider to in the primary's failover.to order (to
// -1: past the end of it): a failover policy whose candidates are always
// skipped shows up there, the last of the list included. *passed is how
// far into that order the request had gone before.
func (p *Proxy) countPassedSkips(x *Exchange, passed *int, to int) {
	if len(x.Skips) == 0 {
		return
	}
	order := x.Upstreams[primaryProvider(x)].FailoverTo
	j := len(order)
	if to >= 0 {
		j = slices.Index(order, to)
	}
	if j < *passed {
		return
	}
	for _, prov := range order[*passed:j] {
		p.countSkipsOf(x, prov)
	}
	*passed = j + 1
}

// countSkipsOf counts provider prov's build-time skips, once per reason,
// when none of its candidates is in the plan.
func (p *Proxy) countSkipsOf(x *Exchange, prov int) {
	if slices.ContainsFunc(x.Candidates, func(c plan.Candidate) bool { return c.Provider == prov }) {
		return
	}
	var counted []string
	for _, s := range x.Skips {
		if s.Provider == prov && !slices.Contains(counted, s.Reason) {
			counted = append(counted, s.Reason)
			p.Metrics.FailoverSkipped(x.Upstreams[prov].Name, s.Reason)
			x.Trace.Skip(x.Upstreams[prov].Name, s.Reason, true)
		}
	}
}
