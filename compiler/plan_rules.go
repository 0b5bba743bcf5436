package compiler

import (
	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
)

// staticRule is an access rule planning decides. Every one that denies a
// candidate is marked on it, so that a suspension of some leaves the
// others' denial standing.
type staticRule struct {
	plan.Rule
	at  cue.Path     // the rule's condition, for evaluation errors
	bit plan.RuleSet // the rule among the profile's (see plan.RuleSet)
}

// staticRules keeps the rules decidable at build time, rules[i] being the
// profile's rule first+i (its bit in a plan.RuleSet). Rules compiled
// without error line up with their declarations, which is all planning
// ever sees.
func staticRules(at cue.Path, rules []plan.Rule, first int) []staticRule {
	var out []staticRule
	for i, r := range rules {
		if r.Static {
			out = append(out, staticRule{Rule: r, at: cue.MakePath(append(index(at, i).Selectors(), cue.Str("when"))...),
				bit: 1 << (first + i)})
		}
	}
	return out
}

// denyingRules is the first static rule that denies a (-1 for none) and
// every one that does, so a suspension of the first leaves the others'
// denial standing.
func (p *planner) denyingRules(env envelope, a expr.Attrs) (int, plan.RuleSet) {
	first, all := -1, plan.RuleSet(0)
	for i, r := range env.rules {
		deny, err := p.progs.Rule(r.Expr, a)
		if err != nil {
			p.ruleFailed(r, a, err)
			continue
		}
		if deny {
			all |= r.bit
			if first < 0 {
				first = i
			}
		}
	}
	return first, all
}

// ruleFailed reports a static rule that cannot be evaluated, once per rule.
func (p *planner) ruleFailed(r staticRule, a expr.Attrs, err error) {
	key := pathString(r.at)
	if p.failed[key] {
		return
	}
	p.failed[key] = true
	p.errorf(r.at, "cannot be evaluated for route %s, model %q, provider %q: %v", a.Route, a.Model, a.Provider, err)
}
