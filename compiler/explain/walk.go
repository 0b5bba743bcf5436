package explain

import (
	"slices"

	"github.com/pistra/pistra/runtime/plan"
)

// PlanRef names one plan the way a reviewer does: profile, route and the
// requested name.
type PlanRef struct {
	Profile string
	Route   plan.Route
	Model   string
}

// Item is one candidate or skip of a plan as Diff names it, with its
// fields and where the policy causes it ("" when it cannot be placed).
type Item struct {
	Name   string
	Fields []Field
	At     string
}

// Field is one named value of an Item.
type Field struct{ Name, Value string }

// PlanView is one plan of one profile: every (route, name) of the profile
// that reaches it, its candidates in attempt order and its skips with
// their reasons, as Diff reads them.
type PlanView struct {
	Profile    string
	Refs       []PlanRef
	Plan       int // index into Graph.Plans
	Candidates []Item
	Skips      []Item
	NativeOnly bool
	Listed     bool
}

// Walk lists the plans of g profile by profile (in g's order), each plan a
// profile reaches once, in the order of its first (route, name). pos
// places the items (nil for a bundle, which keeps no positions).
func Walk(g *plan.Graph, pos Positions) []PlanView {
	var out []PlanView
	for pi, prof := range g.Profiles {
		at := map[int]int{} // plan index → index in out
		for _, e := range g.Tables[prof.Table].Entries {
			ref := PlanRef{prof.Name, e.Route, e.Model}
			if i, ok := at[e.Plan]; ok {
				out[i].Refs = append(out[i].Refs, ref)
				continue
			}
			at[e.Plan] = len(out)
			p := &g.Plans[e.Plan]
			out = append(out, PlanView{Profile: prof.Name, Refs: []PlanRef{ref}, Plan: e.Plan,
				Candidates: items(candidateRecords(g, e.Plan), pos),
				Skips:      items(skipRecords(g, pi, e.Plan), pos),
				NativeOnly: p.NativeOnly, Listed: p.Listed})
		}
	}
	return out
}

func items(rs []record, pos Positions) []Item {
	out := make([]Item, len(rs))
	for i, r := range rs {
		out[i] = Item{Name: r.name, Fields: make([]Field, len(r.fields))}
		for j, f := range r.fields {
			out[i].Fields[j] = Field{f.name, f.value}
		}
		if pos != nil && r.at != nil {
			out[i].At = pos.Pos(r.at...)
		}
	}
	return out
}

// Op says how a plan or one of its items changed.
type Op byte

const (
	Added    Op = '+'
	Removed  Op = '-'
	Modified Op = '~'
)

// Change is one change of a plan, as Diff prints it: Text is Diff's line;
// Kind ("candidate", "skip", or "" for the plan's order and flags) and
// Item name what it changes.
type Change struct {
	Op   Op
	Kind string
	Item string
	Text string
}

// PlanDelta is how one plan differs from a base graph's.
type PlanDelta struct {
	Ref     PlanRef
	Op      Op
	Changes []Change // for a Modified plan
}

// Deltas lists how the plans of g differ from those of base, the work
// Diff prints, sorted by profile, route and name.
func Deltas(base, g *plan.Graph) []PlanDelta {
	d := comparePlans(base, g)
	var out []PlanDelta
	for _, k := range d.added {
		out = append(out, PlanDelta{Ref: k.ref(), Op: Added})
	}
	for _, k := range d.removed {
		out = append(out, PlanDelta{Ref: k.ref(), Op: Removed})
	}
	byKey := map[planKey]int{}
	for _, c := range d.order {
		for _, k := range d.plans[c.key()] {
			i, ok := byKey[k]
			if !ok {
				i = len(out)
				byKey[k] = i
				out = append(out, PlanDelta{Ref: k.ref(), Op: Modified})
			}
			out[i].Changes = append(out[i].Changes, Change{Op: c.op, Kind: c.kind, Item: c.item, Text: c.text})
		}
	}
	slices.SortStableFunc(out, func(a, b PlanDelta) int {
		return comparePlanKeys(planKey{a.Ref.Profile, a.Ref.Route, a.Ref.Model}, planKey{b.Ref.Profile, b.Ref.Route, b.Ref.Model})
	})
	return out
}

func (k planKey) ref() PlanRef { return PlanRef{k.profile, k.route, k.model} }
