package route

import (
	"fmt"

	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
)

// Rules are the access rules that read the key, which the build could not
// fold into the plans, readied for one key: each candidate is put to them
// (deployment-wide first, then the profile's) before fidelity selection, as
// the build does with the rules it could decide, so a denied candidate is
// a skip like any other. The buffers are kept across Reset, so pistrad's
// pooled requests reuse them; a plan the rules leave whole is not copied.
type Rules struct {
	progs *expr.Programs
	rules []plan.Rule
	key   string // the key's name
	cands []plan.Candidate
	skips []plan.Skip
}

// Reset readies r for the key named key under rules, whose expressions
// progs holds, keeping r's buffers. Reset(nil, nil, "") drops what r
// refers to.
func (r *Rules) Reset(progs *expr.Programs, rules []plan.Rule, key string) {
	r.progs, r.rules, r.key = progs, rules, key
	r.cands, r.skips = r.cands[:0], r.skips[:0]
}

// LoadRules readies profile's access rules that read the key for the key
// named key, compiling the graph's CEL only when there are some.
func LoadRules(g *plan.Graph, profile int, key string) (*Rules, error) {
	r := &Rules{rules: g.RequestRules(profile), key: key}
	if len(r.rules) > 0 {
		var err error
		if r.progs, err = expr.Load(g.CEL); err != nil {
			return nil, fmt.Errorf("cel: %w", err)
		}
	}
	return r, nil
}

// apply removes from d the candidates a rule denies, adding each to d's
// skips with the rule's code as its reason.
func (r *Rules) apply(g *plan.Graph, q Query, d *Decision) {
	cands, skips := r.cands[:0], r.skips[:0]
	denied := false
	for i := range d.Candidates {
		c := &d.Candidates[i]
		code := r.deny(g, q, c)
		if code == "" {
			if denied {
				cands = append(cands, *c)
			}
			continue
		}
		if !denied {
			denied = true
			cands = append(cands, d.Candidates[:i]...)
			skips = append(skips, d.Skips...)
		}
		skips = append(skips, plan.Skip{Provider: c.Provider, Channel: c.Channel, Model: c.Model, Reason: code, Translate: c.Translate})
	}
	if denied {
		r.cands, r.skips = cands, skips
		d.Candidates, d.Skips = cands, skips
	}
}

// deny is the code of the first rule denying c, "" when none does. A rule
// that cannot be evaluated denies: an access rule fails closed.
func (r *Rules) deny(g *plan.Graph, q Query, c *plan.Candidate) string {
	prov := &g.Providers[c.Provider]
	a := expr.Attrs{Route: string(q.Route), Model: q.Model, UpstreamModel: c.Model, Profile: g.Profiles[q.Profile].Name,
		Key: r.key, Provider: prov.Name, Channel: prov.Channels[c.Channel].Name}
	for _, rule := range r.rules {
		if deny, err := r.progs.Rule(rule.Expr, a); deny || err != nil {
			return rule.Code
		}
	}
	return ""
}
