package plan

import "math/bits"

// Rule is an access rule: when its condition holds the request is denied
// with the rule's code.
type Rule struct {
	Name    string `json:"name"`
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
	Expr    int    `json:"expr"` // index into Graph.CEL
	// Static is true when the condition reads only facts known at build
	// time; such rules are already folded into the plans: the candidates
	// they deny are skips, kept marked in Plan.WithDenied so a suspension
	// of the rule can restore them.
	Static bool `json:"static"`
}

// RuleSet is a set of the access rules one profile is held to: bit i
// stands for the i-th of the deployment-wide rules followed by the
// profile's own, in the order written (see Graph.ProfileRule). A plan
// several profiles share marks the same candidates for each, so its bit i
// reads as each one's own i-th rule.
type RuleSet uint64

// MaxProfileRules bounds the access rules one profile is held to, the
// deployment's and its own: a RuleSet has a bit for each.
const MaxProfileRules = 64

// First is the lowest rule in s, the one written first; -1 for none.
func (s RuleSet) First() int {
	if s == 0 {
		return -1
	}
	return bits.TrailingZeros64(uint64(s))
}

// Len is how many rules s holds.
func (s RuleSet) Len() int { return bits.OnesCount64(uint64(s)) }

// ProfileRule is the rule that bit i of profile's RuleSets stands for.
func (g *Graph) ProfileRule(profile, i int) *Rule {
	if i < len(g.Rules) {
		return &g.Rules[i]
	}
	return &g.Profiles[profile].Rules[i-len(g.Rules)]
}

// RulesNamed is the set of profile's rules whose name suspended reports:
// a suspension names a rule, and holds for every rule of that name the
// profile is held to. Zero when none is.
func (g *Graph) RulesNamed(profile int, suspended func(name string) bool) RuleSet {
	var s RuleSet
	for i, r := range g.Rules {
		if suspended(r.Name) {
			s |= 1 << i
		}
	}
	for i, r := range g.Profiles[profile].Rules {
		if suspended(r.Name) {
			s |= 1 << (len(g.Rules) + i)
		}
	}
	return s
}

// RequestRule is an access rule the build could not fold into the plans,
// with its bit among its profile's rules.
type RequestRule struct {
	Rule
	Bit RuleSet
}

// RequestRules are the access rules of profile the build could not fold
// into its plans, because they read the key: the deployment-wide ones,
// then the profile's, in the order written. Nil when there are none.
func (g *Graph) RequestRules(profile int) []RequestRule {
	var out []RequestRule
	for i, r := range g.Rules {
		if !r.Static {
			out = append(out, RequestRule{Rule: r, Bit: 1 << i})
		}
	}
	for i, r := range g.Profiles[profile].Rules {
		if !r.Static {
			out = append(out, RequestRule{Rule: r, Bit: 1 << (len(g.Rules) + i)})
		}
	}
	return out
}

// RuleByCode is the first access rule of profile (deployment-wide, then
// its own) whose code is code, the rule behind a skip of that reason.
func (g *Graph) RuleByCode(profile int, code string) (Rule, bool) {
	for _, rules := range [][]Rule{g.Rules, g.Profiles[profile].Rules} {
		for _, r := range rules {
			if r.Code == code {
				return r, true
			}
		}
	}
	return Rule{}, false
}

// WithDeniedOf returns p's candidates with those its static rules deny
// kept in place, each marked with them (Candidate.Denied); nil when the
// rules deny none.
func (g *Graph) WithDeniedOf(p *Plan) []Candidate {
	if p.Denied == 0 {
		return nil
	}
	return g.CandidateLists[p.WithDenied]
}
