package explain

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// planKey names one plan the way a reviewer does: by profile, route and
// requested name, never by index (indexes shift with any edit).
type planKey struct {
	profile string
	route   plan.Route
	model   string
}

func (k planKey) String() string { return k.profile + " " + string(k.route) + " " + k.model }

func comparePlanKeys(a, b planKey) int {
	return cmp.Or(cmp.Compare(a.profile, b.profile), cmp.Compare(a.route, b.route), cmp.Compare(a.model, b.model))
}

// Diff prints which (profile, route, model) plans differ between a and b and
// how, then every changed setting (providers, channels, pools, profiles,
// keys, budgets, access rules). Plans whose changes read the same are
// listed together under one description, so a catalog edit that touches a
// thousand plans reads as one change. It returns how many plans changed.
func Diff(w io.Writer, a, b *plan.Graph) (changed int, err error) {
	d := comparePlans(a, b)
	changed = len(d.added) + len(d.removed) + d.modified
	p := &printer{w: w}
	if changed == 0 {
		p.printf("plans: no change\n")
	} else {
		p.printf("plans: %d changed (%d added, %d removed, %d modified)\n", changed, len(d.added), len(d.removed), d.modified)
	}
	for _, k := range d.added {
		p.printf("+ %s (candidates: %s)\n", k, listOrNone(candidateNames(b, d.refsB[k])))
	}
	for _, k := range d.removed {
		p.printf("- %s\n", k)
	}
	for _, desc := range d.order {
		for _, k := range d.groups[desc] {
			p.printf("~ %s\n", k)
		}
		p.printf("    %s\n", strings.ReplaceAll(desc, "\n", "\n    "))
	}
	writeSettingsDiff(p, a, b)
	return changed, p.err
}

// planDiff is how the plans of two graphs differ.
type planDiff struct {
	refsB          map[planKey]int
	added, removed []planKey
	// groups maps a change description to the plans it describes; order
	// lists the descriptions by their first plan.
	groups   map[string][]planKey
	order    []string
	modified int
}

func comparePlans(a, b *plan.Graph) planDiff {
	refsA := planRefs(a)
	d := planDiff{refsB: planRefs(b), groups: map[string][]planKey{}}
	memo := map[[2]int]string{} // many profiles share plans
	for _, k := range unionKeys(refsA, d.refsB) {
		pa, inA := refsA[k]
		pb, inB := d.refsB[k]
		switch {
		case !inA:
			d.added = append(d.added, k)
		case !inB:
			d.removed = append(d.removed, k)
		default:
			desc, ok := memo[[2]int{pa, pb}]
			if !ok {
				desc = strings.Join(planChanges(a, b, pa, pb), "\n")
				memo[[2]int{pa, pb}] = desc
			}
			if desc == "" {
				continue
			}
			if d.groups[desc] == nil {
				d.order = append(d.order, desc)
			}
			d.groups[desc] = append(d.groups[desc], k)
			d.modified++
		}
	}
	return d
}

// planRefs maps every (profile, route, name) of g to its plan index.
func planRefs(g *plan.Graph) map[planKey]int {
	refs := map[planKey]int{}
	for _, prof := range g.Profiles {
		for _, e := range g.Tables[prof.Table].Entries {
			refs[planKey{prof.Name, e.Route, e.Model}] = e.Plan
		}
	}
	return refs
}

func unionKeys(a, b map[planKey]int) []planKey {
	keys := make([]planKey, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, comparePlanKeys)
	return keys
}

// planChanges describes how plan pb of b differs from plan pa of a, one
// line per change; nil when they are the same.
func planChanges(a, b *plan.Graph, pa, pb int) []string {
	ca, cb := candidateRecords(a, pa), candidateRecords(b, pb)
	var out []string
	if orderA, orderB := commonOrder(ca, cb), commonOrder(cb, ca); !slices.Equal(orderA, orderB) {
		out = append(out, fmt.Sprintf("candidate order: %s -> %s",
			strings.Join(recordNames(ca), ", "), strings.Join(recordNames(cb), ", ")))
	}
	out = append(out, diffRecords("candidate ", ca, cb)...)
	out = append(out, diffRecords("skip ", skipRecords(a, pa), skipRecords(b, pb))...)
	return append(out, fieldChanges(planFlags(&a.Plans[pa]), planFlags(&b.Plans[pb]))...)
}

// candidateRecords renders a plan's candidates, named by provider/channel
// (numbered if a channel ever appears twice) so they compare by identity.
func candidateRecords(g *plan.Graph, pi int) []record {
	cands := g.CandidatesOf(&g.Plans[pi])
	out := make([]record, len(cands))
	seen := map[string]int{}
	for i := range cands {
		c := &cands[i]
		name := channelName(g, c.Provider, c.Channel)
		if seen[name]++; seen[name] > 1 {
			name = fmt.Sprintf("%s(%d)", name, seen[name])
		}
		out[i] = record{name: name, fields: []field{
			{name: "role", value: role(c)},
			{name: "tier", value: string(c.Tier)},
			{name: "translate", value: string(c.Translate)},
			{name: "model", value: c.Model},
			{name: "preserves", value: capsText(c.Preserves)},
			{name: "origin", value: c.Origin},
			{name: "pool_subset", value: c.PoolSubset},
		}}
	}
	return out
}

// skipRecords renders skips as field-less records: a changed skip shows
// as one removed and one added.
func skipRecords(g *plan.Graph, pi int) []record {
	skips := g.SkipsOf(&g.Plans[pi])
	out := make([]record, len(skips))
	for i, s := range skips {
		name := fmt.Sprintf("%s %s %s", channelName(g, s.Provider, s.Channel), orDash(s.Model), s.Reason)
		if s.Translate != plan.TranslateNone {
			name += " (translated " + string(s.Translate) + ")"
		}
		if s.Missing != 0 {
			name += " (missing " + capsText(s.Missing) + ")"
		}
		out[i] = record{name: name}
	}
	return out
}

func planFlags(p *plan.Plan) []field {
	return []field{
		{name: "native only", value: yesNo(p.NativeOnly)},
		{name: "listed", value: yesNo(p.Listed)},
	}
}

func candidateNames(g *plan.Graph, pi int) []string { return recordNames(candidateRecords(g, pi)) }

func recordNames(rs []record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.name
	}
	return out
}

// commonOrder lists the names of a that b also has, in a's order.
func commonOrder(a, b []record) []string {
	var out []string
	for _, r := range a {
		if slices.ContainsFunc(b, func(o record) bool { return o.name == r.name }) {
			out = append(out, r.name)
		}
	}
	return out
}

// writeSettingsDiff prints the changed settings, section by section.
func writeSettingsDiff(p *printer, a, b *plan.Graph) {
	first := true
	for _, s := range sections {
		lines := diffRecords("", s.records(a), s.records(b))
		if len(lines) == 0 {
			continue
		}
		if first {
			p.printf("\nsettings:\n")
			first = false
		}
		p.printf("  %s:\n", s.title)
		for _, l := range lines {
			p.printf("    %s\n", l)
		}
	}
	if first {
		p.printf("settings: no change\n")
	}
}
