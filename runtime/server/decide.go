package server

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/expr"
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
	// skips are the plan's build-time skips, and the candidates the key's
	// access rules denied (see keyRules).
	skips []plan.Skip
}

// decide looks the plan up, reads the capabilities the body uses when some
// candidate could drop one, and runs fidelity selection. The error is the
// refusal the client gets: no plan, no candidate left, or fidelity_loss.
func (s *Server) decide(x *exchange, route plan.Route) (decision, *dialect.Error) {
	kr := &x.keyRules
	kr.progs, kr.rules, kr.key = x.snap.Programs, x.snap.RequestRules[x.profile], ""
	if x.key >= 0 {
		kr.key = x.snap.Graph.Keys[x.key].Name
	}
	d, e := decideOn(x.snap.Graph, x.profile, route, x.rec.Model, &x.caps, x.order, kr)
	if d.sel.Attempt != nil {
		x.order = d.sel.Attempt[:0] // keep the grown buffer for the next request
	}
	return d, e
}

// Decide is the routing decision pistrad makes for a request of profile,
// with the key named key ("" for none), on route naming name and using the
// capabilities in used, before admission (suspensions, budgets, health):
// the candidates it would attempt, in order, or the refusal the client
// would get. `pistrac test` answers a policy's golden cases with it, so
// they hold the gateway's own code.
func Decide(g *plan.Graph, profile int, key string, route plan.Route, name string, used plan.CapSet) ([]plan.Candidate, error) {
	kr, err := loadKeyRules(g, profile, key)
	if err != nil {
		return nil, err
	}
	d, e := decideOn(g, profile, route, name, fixedCaps(used), nil, kr)
	if e != nil {
		return nil, e
	}
	out := make([]plan.Candidate, len(d.sel.Attempt))
	for i, ci := range d.sel.Attempt {
		out[i] = d.cands[ci]
	}
	return out, nil
}

// Allowed is what the access rules that read the key leave of the plan of
// (profile, route, name) for the key named key: the candidates still in it,
// and the plan's skips followed by one per candidate a rule denied, its
// reason the rule's code. `pistrac explain -key` shows the plan this way,
// so it lists what pistrad would pass over. With no such plan the error is
// the refusal the client would get.
func Allowed(g *plan.Graph, profile int, key string, route plan.Route, name string) ([]plan.Candidate, []plan.Skip, error) {
	p, ok := g.Lookup(profile, route, name)
	if !ok {
		return nil, nil, modelError(g, profile, route, name)
	}
	kr, err := loadKeyRules(g, profile, key)
	if err != nil {
		return nil, nil, err
	}
	d := decision{plan: p, cands: g.CandidatesOf(p), skips: g.SkipsOf(p)}
	if len(kr.rules) > 0 {
		kr.apply(g, profile, route, name, &d)
	}
	return d.cands, d.skips, nil
}

// loadKeyRules readies profile's access rules that read the key for key,
// compiling the graph's CEL only when there are some.
func loadKeyRules(g *plan.Graph, profile int, key string) (*keyRules, error) {
	kr := &keyRules{rules: g.RequestRules(profile), key: key}
	if len(kr.rules) > 0 {
		var err error
		if kr.progs, err = expr.Load(g.CEL); err != nil {
			return nil, fmt.Errorf("cel: %w", err)
		}
	}
	return kr, nil
}

// fixedCaps is a capSource that already knows the answer.
type fixedCaps plan.CapSet

func (f fixedCaps) Caps() plan.CapSet { return plan.CapSet(f) }

// decideOn is decide on its inputs alone; buf is reused for the attempt
// order when it has room.
func decideOn(g *plan.Graph, profile int, route plan.Route, name string, src capSource, buf []int, kr *keyRules) (decision, *dialect.Error) {
	p, ok := g.Lookup(profile, route, name)
	if !ok {
		return decision{}, modelError(g, profile, route, name)
	}
	d := decision{plan: p, cands: g.CandidatesOf(p), skips: g.SkipsOf(p)}
	if len(kr.rules) > 0 {
		kr.apply(g, profile, route, name, &d)
	}
	if len(d.cands) == 0 {
		return d, noCandidateError(g, profile, d.skips, name)
	}
	d.used, d.read = capsUsed(p, d.cands, route, src)
	d.sel = plan.Select(d.cands, d.used, g.LossAction(profile), buf)
	if d.sel.Rejected {
		return d, fidelityError(g, d, name)
	}
	return d, nil
}

// keyRules are the access rules that read the key, which the build could
// not fold into the plans: each candidate is put to them (deployment-wide
// first, then the profile's) before fidelity selection, as the build does
// with the rules it could decide, so a denied candidate is a skip like any
// other. The buffers are the exchange's, reused across requests; a plan
// the rules leave whole is not copied.
type keyRules struct {
	progs *expr.Programs
	rules []plan.Rule
	key   string // the key's name
	cands []plan.Candidate
	skips []plan.Skip
}

// apply removes from d the candidates a rule denies, adding each to d's
// skips with the rule's code as its reason.
func (kr *keyRules) apply(g *plan.Graph, profile int, route plan.Route, name string, d *decision) {
	cands, skips := kr.cands[:0], kr.skips[:0]
	denied := false
	for i := range d.cands {
		c := &d.cands[i]
		code := kr.deny(g, profile, route, name, c)
		if code == "" {
			if denied {
				cands = append(cands, *c)
			}
			continue
		}
		if !denied {
			denied = true
			cands = append(cands, d.cands[:i]...)
			skips = append(skips, d.skips...)
		}
		skips = append(skips, plan.Skip{Provider: c.Provider, Channel: c.Channel, Model: c.Model, Reason: code, Translate: c.Translate})
	}
	if denied {
		kr.cands, kr.skips = cands, skips
		d.cands, d.skips = cands, skips
	}
}

// deny is the code of the first rule denying c, "" when none does. A rule
// that cannot be evaluated denies: an access rule fails closed.
func (kr *keyRules) deny(g *plan.Graph, profile int, route plan.Route, name string, c *plan.Candidate) string {
	prov := &g.Providers[c.Provider]
	a := expr.Attrs{Route: string(route), Model: name, UpstreamModel: c.Model, Profile: g.Profiles[profile].Name,
		Key: kr.key, Provider: prov.Name, Channel: prov.Channels[c.Channel].Name}
	for _, r := range kr.rules {
		if deny, err := kr.progs.Rule(r.Expr, a); deny || err != nil {
			return r.Code
		}
	}
	return ""
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
