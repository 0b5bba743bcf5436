package server

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// decision is what routing decided for one request before any upstream is
// dialled. A real request and a preflight reach it by the same call, so
// what preflight answers is what the request would do.
type decision struct {
	plan  *plan.Plan
	cands []plan.Candidate
	// used is what the body was found to use; read says whether it was read
	// at all (not when no candidate could lose anything readable).
	used plan.CapSet
	read bool
	sel  plan.Selection
}

// decide looks the plan up, reads the capabilities the body uses when some
// candidate could drop one, and runs fidelity selection. The error is the
// refusal the client gets: no plan, no candidate left, or fidelity_loss.
func (s *Server) decide(x *exchange, route plan.Route) (decision, *dialect.Error) {
	d, e := decideOn(x.snap.Graph, x.profile, route, x.rec.Model, &x.caps, x.order)
	if d.sel.Attempt != nil {
		x.order = d.sel.Attempt[:0] // keep the grown buffer for the next request
	}
	return d, e
}

// Decide is the routing decision pistrad makes for a request of profile on
// route naming name and using the capabilities in used, before admission
// (suspensions, budgets, health): the candidates it would attempt, in
// order, or the refusal the client would get. `pistrac test` answers a
// policy's golden cases with it, so they hold the gateway's own code.
func Decide(g *plan.Graph, profile int, route plan.Route, name string, used plan.CapSet) ([]plan.Candidate, *dialect.Error) {
	d, e := decideOn(g, profile, route, name, fixedCaps(used), nil)
	if e != nil {
		return nil, e
	}
	out := make([]plan.Candidate, len(d.sel.Attempt))
	for i, ci := range d.sel.Attempt {
		out[i] = d.cands[ci]
	}
	return out, nil
}

// fixedCaps is a capSource that already knows the answer.
type fixedCaps plan.CapSet

func (f fixedCaps) Caps() plan.CapSet { return plan.CapSet(f) }

// decideOn is decide on its inputs alone; buf is reused for the attempt
// order when it has room.
func decideOn(g *plan.Graph, profile int, route plan.Route, name string, src capSource, buf []int) (decision, *dialect.Error) {
	p, ok := g.Lookup(profile, route, name)
	if !ok {
		return decision{}, modelError(g, profile, route, name)
	}
	d := decision{plan: p, cands: g.CandidatesOf(p)}
	if len(d.cands) == 0 {
		return d, noCandidateError(g, p, name)
	}
	d.used, d.read = capsUsed(p, d.cands, route, src)
	d.sel = plan.Select(d.cands, d.used, g.LossAction(profile), buf)
	if d.sel.Rejected {
		return d, fidelityError(g, d, name)
	}
	return d, nil
}

// capSource is the body's capability read; *caps.Reader, memoized per
// request, in production.
type capSource interface{ Caps() plan.CapSet }

var _ capSource = (*caps.Reader)(nil)

// capsUsed asks src only when the answer could change selection: never for
// a native-only plan, and not when every candidate keeps everything the
// route's reader can detect.
func capsUsed(p *plan.Plan, cands []plan.Candidate, route plan.Route, src capSource) (plan.CapSet, bool) {
	if p.NativeOnly {
		return 0, false
	}
	detectable := caps.Detectable(route)
	for i := range cands {
		if detectable&^cands[i].Preserves != 0 {
			return src.Caps(), true
		}
	}
	return 0, false
}

// countSelection records the candidates selection passed over: skipped
// when a lossless one remains, rejected when none did. One increment per
// capability each would have dropped.
func (s *Server) countSelection(g *plan.Graph, d *decision) {
	action := metrics.DowngradeSkipped
	if d.sel.Rejected {
		action = metrics.DowngradeRejected
	}
	for _, l := range d.sel.Passed {
		s.countLosses(g, &d.cands[l.Candidate], l.Missing, action)
	}
}

// countLosses records each capability in lost for candidate c.
func (s *Server) countLosses(g *plan.Graph, c *plan.Candidate, lost plan.CapSet, action string) {
	prov := &g.Providers[c.Provider]
	channel := prov.Channels[c.Channel].Name
	for m := uint32(lost); m != 0; m &= m - 1 {
		s.metrics.Downgrade(prov.Name, channel, plan.Cap(bits.TrailingZeros32(m)).String(), action)
	}
}

// describe names candidate c for a client, with what it would drop of the
// capabilities the request uses and the provenance of its channel's claim.
func describe(g *plan.Graph, c *plan.Candidate, used plan.CapSet) dialect.Candidate {
	prov := &g.Providers[c.Provider]
	ch := &prov.Channels[c.Channel]
	d := dialect.Candidate{
		Provider: prov.Name, Channel: ch.Name, Tier: c.Tier, Model: c.Model, Translate: c.Translate,
		Lost: used &^ c.Preserves, Origin: c.Origin, VerifiedAt: ch.VerifiedAt, VerifiedBy: ch.VerifiedBy,
	}
	if c.Translate != plan.TranslateNone {
		// The claim is the translator's, not the native channel's it rides.
		d.VerifiedAt, d.VerifiedBy = "", translate.Claim(c.Translate)
	}
	return d
}

// origins lists the distinct claim origins of a rejected request's
// candidates, for the log line.
func origins(d *decision) string {
	var out []string
	for _, l := range d.sel.Passed {
		if o := d.cands[l.Candidate].Origin; !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}
