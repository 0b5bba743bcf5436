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

// Positions says where a policy writes a value: the file:line:col of the
// value at path (field names, list indexes, and Named entries of the keys,
// budgets and access_rules lists), or of the longest prefix the policy
// writes; "" when it writes none of it. pistrac gives the compiler's
// reading of a policy directory; a bundle keeps no positions (nil).
type Positions interface {
	Pos(path ...any) string
}

// Named selects the entry of a list whose name field is the given name.
type Named string

// Diff prints which (profile, route, model) plans differ between a and b and
// how, then every changed setting (providers, channels, pools, profiles,
// keys, budgets, access rules). Each change of a plan is printed once, with
// where the policy makes it and every plan it applies to, so a catalog
// edit that touches a thousand plans reads as one change. pa and pb place
// changes in the policies of a and b (either may be nil). It returns how
// many plans and settings changed.
func Diff(w io.Writer, a, b *plan.Graph, pa, pb Positions) (changed int, err error) {
	d := comparePlans(a, b)
	nPlans := len(d.added) + len(d.removed) + d.modified
	p := &printer{w: w}
	if nPlans == 0 {
		p.printf("plans: no change\n")
	} else {
		p.printf("plans: %d changed (%d added, %d removed, %d modified)\n", nPlans, len(d.added), len(d.removed), d.modified)
	}
	for _, k := range d.added {
		p.printf("+ %s (candidates: %s)\n", k, listOrNone(candidateNames(b, d.refsB[k])))
	}
	for _, k := range d.removed {
		p.printf("- %s\n", k)
	}
	for _, c := range d.order {
		p.printf("%s\n", c.text)
		writeAt(p, "    ", c, pa, pb)
		plans := d.plans[c.key()]
		p.printf("    in %s:\n", count(len(plans), "plan"))
		for _, k := range plans {
			p.printf("      %s\n", k)
		}
	}
	return nPlans + writeSettingsDiff(p, a, b, pa, pb), p.err
}

// writeAt prints where the policy makes change c, when it can be placed.
func writeAt(p *printer, indent string, c change, pa, pb Positions) {
	src := pb
	if c.removed {
		src = pa
	}
	if src == nil || c.at == nil {
		return
	}
	if pos := src.Pos(c.at...); pos != "" {
		p.printf("%sat %s\n", indent, pos)
	}
}

// planDiff is how the plans of two graphs differ.
type planDiff struct {
	refsB          map[planKey]int
	added, removed []planKey
	// plans maps each change of a modified plan to every plan it applies
	// to; order lists the changes by their first plan.
	plans    map[string][]planKey
	order    []change
	modified int
}

// key identifies a change across plans: the same words about the same
// policy value.
func (c change) key() string { return fmt.Sprint(c.text, c.at, c.removed) }

func comparePlans(a, b *plan.Graph) planDiff {
	refsA := planRefs(a)
	d := planDiff{refsB: planRefs(b), plans: map[string][]planKey{}}
	// A skip is placed at its cause, which may be the profile's (its
	// allowed_models, its rules), so a shared plan's changes are worked
	// out once per profile.
	type memoKey struct {
		profile string
		pa, pb  int
	}
	memo := map[memoKey][]change{}
	profA, profB := profileIndex(a), profileIndex(b)
	for _, k := range unionKeys(refsA, d.refsB) {
		pa, inA := refsA[k]
		pb, inB := d.refsB[k]
		switch {
		case !inA:
			d.added = append(d.added, k)
		case !inB:
			d.removed = append(d.removed, k)
		default:
			mk := memoKey{k.profile, pa, pb}
			cs, ok := memo[mk]
			if !ok {
				cs = planChanges(a, b, profA[k.profile], profB[k.profile], pa, pb)
				memo[mk] = cs
			}
			if len(cs) == 0 {
				continue
			}
			for _, c := range cs {
				if d.plans[c.key()] == nil {
					d.order = append(d.order, c)
				}
				d.plans[c.key()] = append(d.plans[c.key()], k)
			}
			d.modified++
		}
	}
	return d
}

// profileIndex maps each profile's name to its index in g.
func profileIndex(g *plan.Graph) map[string]int {
	out := make(map[string]int, len(g.Profiles))
	for i, p := range g.Profiles {
		out[p.Name] = i
	}
	return out
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

// planChanges describes how plan pb of b differs from plan pa of a, both
// as profile ia of a and ib of b use them, one change per line; nil when
// they are the same.
func planChanges(a, b *plan.Graph, ia, ib, pa, pb int) []change {
	ca, cb := candidateRecords(a, pa), candidateRecords(b, pb)
	var out []change
	if orderA, orderB := commonOrder(ca, cb), commonOrder(cb, ca); !slices.Equal(orderA, orderB) {
		// The order is the primary's failover list, then each provider's
		// channels in tier order.
		var at []any
		if len(cb) > 0 {
			at = []any{"providers", cb[0].at[1], "failover"}
		}
		out = append(out, change{text: fmt.Sprintf("~ candidate order: %s -> %s",
			strings.Join(recordNames(ca), ", "), strings.Join(recordNames(cb), ", ")), at: at, op: Modified})
	}
	out = append(out, diffRecords("candidate ", ca, cb)...)
	out = append(out, diffRecords("skip ", skipRecords(a, ia, pa), skipRecords(b, ib, pb))...)
	for _, c := range fieldChanges(planFlags(a, pa), planFlags(b, pb), nil) {
		c.text = "~ " + c.text
		out = append(out, c)
	}
	return out
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
		prov := &g.Providers[c.Provider]
		out[i] = record{name: name, at: []any{"providers", prov.Name, "channels", prov.Channels[c.Channel].Name}, fields: []field{
			{name: "role", value: role(c)},
			{name: "tier", value: string(c.Tier), key: "tier"},
			{name: "translate", value: string(c.Translate)},
			{name: "model", value: c.Model},
			{name: "preserves", value: capsText(c.Preserves), key: "preserves"},
			{name: "origin", value: c.Origin, key: "origin"},
			{name: "pool_subset", value: c.PoolSubset},
		}}
	}
	return out
}

// skipRecords renders the skips of plan pi, as profile prof has it, as
// field-less records: a changed skip shows as one removed and one added.
func skipRecords(g *plan.Graph, prof, pi int) []record {
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
		out[i] = record{name: name, at: skipAt(g, prof, s)}
	}
	return out
}

// skipAt is where the policy causes skip s of profile prof: the access
// rule whose code it carries, the profile's allowed_models, require_caps or
// pool_subset, and otherwise the provider or channel that cannot serve.
func skipAt(g *plan.Graph, prof int, s plan.Skip) []any {
	name := g.Profiles[prof].Name
	for _, r := range g.Rules {
		if r.Code == s.Reason {
			return []any{"access_rules", Named(r.Name)}
		}
	}
	for _, r := range g.Profiles[prof].Rules {
		if r.Code == s.Reason {
			return []any{"profiles", name, "access_rules", Named(r.Name)}
		}
	}
	switch s.Reason {
	case "model_denied":
		return []any{"profiles", name, "allowed_models"}
	case "fidelity_loss":
		return []any{"profiles", name, "require_caps"}
	case "pool_subset_missing":
		return []any{"profiles", name, "pool_subset"}
	}
	at := []any{"providers", g.Providers[s.Provider].Name}
	if s.Channel >= 0 {
		at = append(at, "channels", g.Providers[s.Provider].Channels[s.Channel].Name)
	}
	return at
}

// planFlags renders what a plan says of itself; native only means nothing
// of a plan with no candidates, and says so.
func planFlags(g *plan.Graph, pi int) []field {
	p := &g.Plans[pi]
	native := yesNo(p.NativeOnly)
	if len(g.CandidatesOf(p)) == 0 {
		native = "no candidates"
	}
	return []field{
		{name: "native only", value: native},
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

// writeSettingsDiff prints the changed settings, section by section, each
// with where the policy says it, and returns how many changed.
func writeSettingsDiff(p *printer, a, b *plan.Graph, pa, pb Positions) int {
	n := 0
	for _, s := range sections {
		cs := diffRecords("", s.records(a), s.records(b))
		if len(cs) == 0 {
			continue
		}
		if n == 0 {
			p.printf("\nsettings:\n")
		}
		n += len(cs)
		p.printf("  %s:\n", s.title)
		for _, c := range cs {
			p.printf("    %s\n", c.text)
			writeAt(p, "      ", c, pa, pb)
		}
	}
	if n == 0 {
		p.printf("settings: no change\n")
	}
	return n
}
