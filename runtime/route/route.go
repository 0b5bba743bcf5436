// Package route is the routing decision: for a request of a profile on a
// route naming a model, the plan the graph holds for it, the candidates
// suspended access rules no longer deny put back, what the access rules
// that read the key leave of it, the capabilities the body uses when
// some candidate could drop one, fidelity selection, and the refusal the
// client gets when nothing may serve. It is pure over the graph: pistrad
// decides every request with it before admission and the attempt loop,
// preflight answers from the same call, and `pistrac test`, `explain` and
// the golden cases hold policies to it, so they all see one decision.
package route

import (
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// Query names what is decided: whose request (the profile's index), on
// which route, naming which model.
type Query struct {
	Profile int
	Route   plan.Route
	Model   string
}

// Decision is what routing decided for one request before any upstream is
// dialled. A real request and a preflight reach it by the same call, so
// what preflight answers is what the request would do.
type Decision struct {
	Query      Query
	Plan       *plan.Plan
	Candidates []plan.Candidate
	// Skips are the plan's build-time skips, followed by the candidates the
	// key's access rules denied (see Rules).
	Skips []plan.Skip
	// Lifted are the candidates kept although a suspended access rule
	// denies them, each with the suspended rules that do (Skip.Rules) and
	// the first one's code.
	Lifted []plan.Skip
	// Used is what the body was found to use; Read says whether it was
	// read at all (not when no candidate could lose anything readable).
	Used      plan.CapSet
	Read      bool
	Selection plan.Selection
}

// CapSource is the body's capability read; *caps.Reader, memoized per
// request, in pistrad. Body is the body read, for what a translation loses
// of that body in particular (translate.RequestLosses); nil when the
// capabilities are stated rather than read.
type CapSource interface {
	Caps() plan.CapSet
	Body() []byte
}

var _ CapSource = (*caps.Reader)(nil)

// Fixed is a CapSource that already knows the answer: the capabilities a
// policy case or an explain query states.
type Fixed plan.CapSet

// Caps returns f.
func (f Fixed) Caps() plan.CapSet { return plan.CapSet(f) }

// Body returns nil: stated capabilities have no body.
func (Fixed) Body() []byte { return nil }

// Decide looks the plan up, restores the candidates only suspended rules
// deny (a bit test when none is), puts its candidates to rules (nil for none),
// asks src for the capabilities the body uses when some candidate could
// drop one, and runs fidelity selection; buf is reused for the attempt
// order when it has room. The error is the refusal the client gets: no
// plan, no candidate left, or fidelity_loss. What was decided up to the
// refusal stays in the Decision, for the counts and the log line.
func Decide(g *plan.Graph, q Query, src CapSource, rules *Rules, buf []int) (Decision, *dialect.Error) {
	p, ok := g.Lookup(q.Profile, q.Route, q.Model)
	if !ok {
		return Decision{Query: q}, modelError(g, q)
	}
	d := Decision{Query: q, Plan: p, Candidates: g.CandidatesOf(p), Skips: g.SkipsOf(p)}
	nativeOnly := p.NativeOnly
	if rules != nil {
		restored := p.Denied&rules.suspended != 0
		if restored {
			rules.restore(g, p, &d)
			nativeOnly = false // the build judged the plan without them
		}
		if restored || len(rules.rules) > 0 {
			rules.apply(g, q, &d)
		}
	}
	if len(d.Candidates) == 0 {
		return d, noCandidateError(g, q, d.Skips)
	}
	d.Used, d.Read = capsUsed(nativeOnly, d.Candidates, q.Route, src)
	if d.Read {
		d.Candidates = narrowByBody(d.Candidates, d.Used, src.Body())
	}
	d.Selection = plan.Select(d.Candidates, d.Used, g.LossAction(q.Profile), buf)
	if d.Selection.Rejected {
		return d, fidelityError(g, &d, q.Model)
	}
	return d, nil
}

// Attempts is the decision for the key named key ("" for none) on a body
// using exactly used, with the access rules named in suspended suspended:
// the candidates pistrad would attempt, in order, or the refusal (a
// *dialect.Error) the client would get. `pistrac test` and the golden
// cases answer with it, so they hold the gateway's own code.
func Attempts(g *plan.Graph, q Query, key string, suspended []string, used plan.CapSet) ([]plan.Candidate, error) {
	rules, err := LoadRules(g, q.Profile, key)
	if err != nil {
		return nil, err
	}
	rules.Suspend(g.RulesNamed(q.Profile, func(name string) bool { return slices.Contains(suspended, name) }))
	d, e := Decide(g, q, Fixed(used), rules, nil)
	if e != nil {
		return nil, e
	}
	out := make([]plan.Candidate, len(d.Selection.Attempt))
	for i, ci := range d.Selection.Attempt {
		out[i] = d.Candidates[ci]
	}
	return out, nil
}

// capsUsed asks src only when the answer could change selection: never for
// a native-only plan, and not when every candidate keeps everything the
// route's reader can detect.
func capsUsed(nativeOnly bool, cands []plan.Candidate, route plan.Route, src CapSource) (plan.CapSet, bool) {
	if nativeOnly {
		return 0, false
	}
	detectable := caps.Detectable(route)
	for i := range cands {
		if detectable&^(cands[i].Preserves&^translate.BodyLosable(cands[i].Translate)) != 0 {
			return src.Caps(), true
		}
	}
	return 0, false
}

// narrowByBody takes from each translated candidate's preserves what its
// pair loses of this body in particular (translate.RequestLosses: a strict
// schema the upstream cannot enforce whole), copying the candidates only
// when one loses something. A pair judges the body again only when the
// pair changes from one translated candidate to the next.
func narrowByBody(cands []plan.Candidate, used plan.CapSet, body []byte) []plan.Candidate {
	judged, lost, copied := plan.TranslateNone, plan.CapSet(0), false
	for i := range cands {
		t := cands[i].Translate
		if t == plan.TranslateNone || used&translate.BodyLosable(t) == 0 {
			continue
		}
		if t != judged {
			judged, lost = t, translate.RequestLosses(t, body, used)
		}
		if lost&cands[i].Preserves == 0 {
			continue
		}
		if !copied {
			cands, copied = slices.Clone(cands), true
		}
		cands[i].Preserves &^= lost
	}
	return cands
}

// Origins lists the distinct claim origins of the candidates selection
// passed over, for the log line of a rejected request.
func (d *Decision) Origins() string {
	var out []string
	for _, l := range d.Selection.Passed {
		if o := d.Candidates[l.Candidate].Origin; !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}
