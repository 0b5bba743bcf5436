package plan

import (
	"slices"
	"sort"
	"unsafe"
)

// Lookup returns the plan for (profile, route, name), or false when the
// profile has no plan for that name on that route.
func (g *Graph) Lookup(profile int, route Route, name string) (*Plan, bool) {
	es := g.Tables[g.Profiles[profile].Table].Entries
	i := sort.Search(len(es), func(i int) bool {
		e := &es[i]
		if e.Route != route {
			return e.Route > route
		}
		return e.Model >= name
	})
	if i < len(es) && es[i].Route == route && es[i].Model == name {
		return &g.Plans[es[i].Plan], true
	}
	return nil, false
}

// PlanID is p's index in g.Plans, which a trace names a decision's plan
// by; -1 when p is not one of them (nil included). p is what Lookup
// returned, so its index is its offset in the slice.
func (g *Graph) PlanID(p *Plan) int {
	if p == nil || len(g.Plans) == 0 {
		return -1
	}
	off := uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(&g.Plans[0]))
	i := int(off / unsafe.Sizeof(Plan{}))
	if off%unsafe.Sizeof(Plan{}) != 0 || i < 0 || i >= len(g.Plans) || &g.Plans[i] != p {
		return -1
	}
	return i
}

// RoutesOf returns the routes on which profile has a plan for name, in
// Routes order; nil when it has none.
func (g *Graph) RoutesOf(profile int, name string) []Route {
	sets := g.Tables[g.Profiles[profile].Table].RouteSets
	i := sort.SearchStrings(g.Names, name)
	if i < len(g.Names) && g.Names[i] == name && i < len(sets) {
		return sets[i].Routes()
	}
	return nil
}

// RouteSetsOf derives Table.RouteSets from a table's entries, for the
// sorted catalog names; nil when the table has no entries. Names and
// routes it does not know (a bundle not yet verified) are left out.
func RouteSetsOf(names []string, es []Entry) []RouteSet {
	if len(es) == 0 {
		return nil
	}
	out := make([]RouteSet, len(names))
	for _, e := range es {
		r := slices.Index(Routes, e.Route)
		if i := sort.SearchStrings(names, e.Model); r >= 0 && i < len(names) && names[i] == e.Model {
			out[i] |= 1 << r
		}
	}
	return out
}

// LossAction is profile's on_fidelity_loss: its own, else the
// deployment's.
func (g *Graph) LossAction(profile int) LossAction {
	if v := g.Profiles[profile].OnFidelityLoss; v != "" {
		return v
	}
	return g.OnFidelityLoss
}

// Known reports whether name is served by the catalog at all.
func (g *Graph) Known(name string) bool {
	i := sort.SearchStrings(g.Names, name)
	return i < len(g.Names) && g.Names[i] == name
}

// CandidatesOf returns the ordered candidates of p.
func (g *Graph) CandidatesOf(p *Plan) []Candidate { return g.CandidateLists[p.Candidates] }

// SkipsOf returns the statically skipped candidates of p.
func (g *Graph) SkipsOf(p *Plan) []Skip { return g.SkipLists[p.Skips] }

// Listed returns the names advertised to profile on route, sorted.
func (g *Graph) Listed(profile int, route Route) []string {
	var out []string
	for _, e := range g.Tables[g.Profiles[profile].Table].Entries {
		if e.Route == route && g.Plans[e.Plan].Listed {
			out = append(out, e.Model)
		}
	}
	return out
}

// SortEntries puts entries in the order Lookup expects.
func SortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].Route != es[j].Route {
			return es[i].Route < es[j].Route
		}
		return es[i].Model < es[j].Model
	})
}

// PoolOf is the pool candidate c is sent to a member of, nil when c's
// channel has a URL of its own (its provider is no pool, or the channel
// reaches it elsewhere).
func (g *Graph) PoolOf(c *Candidate) *Pool {
	p := &g.Providers[c.Provider]
	if p.Pool < 0 || p.Pool >= len(g.Pools) || p.BaseURL != "" || p.Channels[c.Channel].BaseURL != "" {
		return nil
	}
	return &g.Pools[p.Pool]
}

// MemberDNS is the DNS name (host:port) whose addresses are the members a
// candidate restricted to subset ("" for none) may be sent to: the
// subset's own, else the pool's; "" for a subset the pool lacks.
func (p *Pool) MemberDNS(subset string) string {
	if subset == "" {
		return p.DNS
	}
	for _, s := range p.Subsets {
		if s.Name == subset {
			return s.DNS
		}
	}
	return ""
}
