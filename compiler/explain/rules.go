package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// suspendHow is how an operator suspends a rule on a running gateway.
const suspendHow = `POST /admin/v1/suspensions {"kind":"rule","name":NAME}`

// suspendedSet is the set of profile's rules the query suspends, or an
// error naming a rule the profile is not held to.
func suspendedSet(g *plan.Graph, profile int, names []string) (plan.RuleSet, error) {
	var declared []string
	for i := range len(g.Rules) + len(g.Profiles[profile].Rules) {
		declared = append(declared, g.ProfileRule(profile, i).Name)
	}
	for _, n := range names {
		if !slices.Contains(declared, n) {
			return 0, fmt.Errorf("profile %q is held to no access rule %q (its rules: %s)", g.Profiles[profile].Name, n,
				listOrNone(declared))
		}
	}
	return g.RulesNamed(profile, func(n string) bool { return slices.Contains(names, n) }), nil
}

// buildSkips is how many of skips the build made: those the rules that
// read the key add come last.
func buildSkips(g *plan.Graph, profile int, skips []plan.Skip) int {
	for i, sk := range skips {
		if sk.Rules != 0 && !g.ProfileRule(profile, sk.Rules.First()).Static {
			return i
		}
	}
	return len(skips)
}

// writeDenials names the access rules behind the decision's denials, each
// of which an operator can suspend.
func writeDenials(p *printer, g *plan.Graph, profile int, skips []plan.Skip) {
	if !slices.ContainsFunc(skips, func(sk plan.Skip) bool { return sk.Rules != 0 }) {
		return
	}
	p.printf("\naccess rules denying candidates here, each suspendable (%s; -suspend NAME previews it):\n", suspendHow)
	writeRuleRows(p, g, profile, skips, "denies")
}

// writeLifted names what the rules the query suspends let through.
func writeLifted(p *printer, g *plan.Graph, profile int, lifted []plan.Skip, suspended []string) {
	if len(suspended) == 0 {
		return
	}
	p.printf("\nsuspended (-suspend %s), so denying nothing:\n", strings.Join(suspended, ","))
	if len(lifted) == 0 {
		p.printf("  nothing let through: every candidate of this plan they deny, another rule denies too\n")
		return
	}
	writeRuleRows(p, g, profile, lifted, "would deny")
}

// writeRuleRows prints one row per rule and candidate it denies, rules in
// the order they are applied.
func writeRuleRows(p *printer, g *plan.Graph, profile int, skips []plan.Skip, verb string) {
	var all plan.RuleSet
	for _, sk := range skips {
		all |= sk.Rules
	}
	tw := p.table()
	row(tw, "  ", "access rule", "of", "decided", "code", verb)
	for ; all != 0; all &= all - 1 {
		i := all.First()
		r := g.ProfileRule(profile, i)
		of, decided := "deployment", "per request"
		if i >= len(g.Rules) {
			of = "profile " + g.Profiles[profile].Name
		}
		if r.Static {
			decided = "at build"
		}
		for _, sk := range skips {
			if sk.Rules&(1<<i) != 0 {
				what := channelName(g, sk.Provider, sk.Channel) + " " + orDash(sk.Model)
				if sk.Translate != plan.TranslateNone {
					what += " (" + pairText(sk.Translate) + ")"
				}
				row(tw, "  ", r.Name, of, decided, r.Code, what)
			}
		}
	}
	tw.Flush()
}
