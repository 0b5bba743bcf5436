package route

import (
	"fmt"

	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
)

// Rules are the access rules that read the key, which the build could not
// fold into the plans, readied for one key, and the profile's rules
// suspended now. Each candidate is put to the rules that read the key
// (deployment-wide first, then the profile's) before fidelity selection,
// as the build does with the rules it could decide, so a denied candidate
// is a skip like any other. A suspended rule denies nothing: the
// candidates only it denies at build time are restored from the plan, in
// attempt order, and it is passed over when the rules are read per
// request. The buffers are kept across Reset, so pistrad's pooled requests
// reuse them; a plan the rules leave whole is not copied.
type Rules struct {
	progs *expr.Programs
	rules []plan.RequestRule
	key   string // the key's name
	// suspended are the profile's rules suspended now (see Suspend).
	suspended plan.RuleSet
	cands     []plan.Candidate
	skips     []plan.Skip
	// restored, kept and lifted are the lists of a decision a suspension
	// changed: its candidates, skips and lifted denials.
	restored []plan.Candidate
	kept     []plan.Skip
	lifted   []plan.Skip
}

// Reset readies r for the key named key under rules, whose expressions
// progs holds, with no rule suspended, keeping r's buffers.
// Reset(nil, nil, "") drops what r refers to.
func (r *Rules) Reset(progs *expr.Programs, rules []plan.RequestRule, key string) {
	r.progs, r.rules, r.key, r.suspended = progs, rules, key, 0
	r.cands, r.skips = r.cands[:0], r.skips[:0]
}

// Suspend holds the profile's rules in s suspended for the decision (see
// plan.Graph.RulesNamed).
func (r *Rules) Suspend(s plan.RuleSet) { r.suspended = s }

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

// restore serves p from its candidates with those that only suspended
// rules deny put back in place, and drops their skips; a skip whose first
// rule is suspended while another still denies takes that one's code.
func (r *Rules) restore(g *plan.Graph, p *plan.Plan, d *Decision) {
	susp := r.suspended
	cands, skips := r.restored[:0], r.kept[:0]
	for _, c := range g.WithDeniedOf(p) {
		if c.Denied&^susp == 0 {
			cands = append(cands, c)
		}
	}
	for _, sk := range d.Skips {
		if sk.Rules&susp != 0 {
			if sk.Rules&^susp == 0 {
				continue
			}
			sk.Rules &^= susp
			sk.Reason = g.ProfileRule(d.Query.Profile, sk.Rules.First()).Code
		}
		skips = append(skips, sk)
	}
	r.restored, r.kept = cands, skips
	d.Candidates, d.Skips = cands, skips
}

// apply removes from d the candidates a rule denies, adding each to d's
// skips with the rule's code as its reason, and notes in d.Lifted every
// candidate kept that a suspended rule denies.
func (r *Rules) apply(g *plan.Graph, q Query, d *Decision) {
	cands, skips, lifted := r.cands[:0], r.skips[:0], r.lifted[:0]
	denied := false
	for i := range d.Candidates {
		c := &d.Candidates[i]
		code, bit, off := r.deny(g, q, c)
		if code == "" {
			if off |= c.Denied; off != 0 {
				lifted = append(lifted, plan.Skip{Provider: c.Provider, Channel: c.Channel, Model: c.Model,
					Reason: g.ProfileRule(q.Profile, off.First()).Code, Translate: c.Translate, Rules: off})
			}
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
		skips = append(skips, plan.Skip{Provider: c.Provider, Channel: c.Channel, Model: c.Model, Reason: code,
			Translate: c.Translate, Rules: bit})
	}
	if denied {
		r.cands, r.skips = cands, skips
		d.Candidates, d.Skips = cands, skips
	}
	r.lifted, d.Lifted = lifted, lifted
}

// deny is the code and bit of the first rule denying c ("" when none
// does), and the suspended rules that would have denied it. A rule that
// cannot be evaluated denies: an access rule fails closed.
func (r *Rules) deny(g *plan.Graph, q Query, c *plan.Candidate) (string, plan.RuleSet, plan.RuleSet) {
	if len(r.rules) == 0 {
		return "", 0, 0
	}
	prov := &g.Providers[c.Provider]
	a := expr.Attrs{Route: string(q.Route), Model: q.Model, UpstreamModel: c.Model, Profile: g.Profiles[q.Profile].Name,
		Key: r.key, Provider: prov.Name, Channel: prov.Channels[c.Channel].Name}
	var lifted plan.RuleSet
	for _, rule := range r.rules {
		if deny, err := r.progs.Rule(rule.Expr, a); deny || err != nil {
			if rule.Bit&r.suspended != 0 {
				lifted |= rule.Bit
				continue
			}
			return rule.Code, rule.Bit, 0
		}
	}
	return "", 0, lifted
}
