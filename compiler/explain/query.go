package explain

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pistra/pistra/runtime/plan"
)

// Query names one plan: whose (a profile, or a key standing for its
// profile), which route, which requested name, and optionally the
// capabilities a request uses.
type Query struct {
	Profile string
	// Key is an alternative to Profile: the name of a key, whose profile is
	// used.
	Key   string
	Route plan.Route
	Model string
	Caps  plan.CapSet
	// Suspend names access rules to decide with suspended, as pistrad
	// does while an operator's suspension of them stands.
	Suspend []string
}

// resolved is a query checked against a graph.
type resolved struct {
	profile int
	key     string // the key's name when the query gave one
}

// resolve checks whose plan a query asks for, on which route, for which
// name, or explains precisely what is missing, listing what would have
// been accepted.
func resolve(g *plan.Graph, q Query) (resolved, error) {
	prof, err := profileOf(g, q)
	if err != nil {
		return resolved{}, err
	}
	if !slices.Contains(plan.Routes, q.Route) {
		routes := listOrNone(routeNames(plan.Routes))
		if q.Route == "" {
			return resolved{}, fmt.Errorf("no route given (routes: %s)", routes)
		}
		return resolved{}, fmt.Errorf("unknown route %q (routes: %s)", q.Route, routes)
	}
	if q.Model == "" {
		return resolved{}, fmt.Errorf("no model given (%s)", validNames(g, prof, q.Route))
	}
	return resolved{profile: prof, key: q.Key}, nil
}

// profileOf returns the index of the profile the query names directly or
// through a key.
func profileOf(g *plan.Graph, q Query) (int, error) {
	switch {
	case q.Profile != "" && q.Key != "":
		return 0, errors.New("give a profile or a key, not both")
	case q.Key != "":
		for _, k := range g.Keys {
			if k.Name == q.Key {
				return k.Profile, nil
			}
		}
		names := make([]string, len(g.Keys))
		for i, k := range g.Keys {
			names[i] = k.Name
		}
		return 0, fmt.Errorf("unknown key %q (keys: %s)", q.Key, listOrNone(sorted(names)))
	}
	for i, p := range g.Profiles {
		if p.Name == q.Profile {
			return i, nil
		}
	}
	names := make([]string, len(g.Profiles))
	for i, p := range g.Profiles {
		names[i] = p.Name
	}
	if q.Profile == "" {
		return 0, fmt.Errorf("no profile or key given (profiles: %s)", listOrNone(sorted(names)))
	}
	return 0, fmt.Errorf("unknown profile %q (profiles: %s)", q.Profile, listOrNone(sorted(names)))
}

// noPlan tells apart the ways a (profile, route, name) can lack a plan: the
// name is not in the catalog at all, the profile may use it but not on this
// route, another profile may use it on this route but this one may not, or
// nothing serves it on this route.
func noPlan(g *plan.Graph, prof int, route plan.Route, name string) error {
	p := &g.Profiles[prof]
	valid := validNames(g, prof, route)
	if !g.Known(name) {
		return fmt.Errorf("model %q is not in the catalog (%s)", name, valid)
	}
	if routes := routesWith(g, p.Table, name); len(routes) > 0 {
		return fmt.Errorf("model %q is not served on route %s for profile %q (it is on: %s; %s)",
			name, route, p.Name, listOrNone(routeNames(routes)), valid)
	}
	for i := range g.Tables {
		if slices.Contains(routesWith(g, i, name), route) {
			return fmt.Errorf("model %q is not allowed for profile %q (allowed_models: %s; %s)",
				name, p.Name, listOrNone(p.AllowedModels), valid)
		}
	}
	return fmt.Errorf("model %q is not served on route %s by any channel (%s)", name, route, valid)
}

// validNames lists the names a profile may use on a route.
func validNames(g *plan.Graph, prof int, route plan.Route) string {
	return fmt.Sprintf("names profile %q may use on %s: %s", g.Profiles[prof].Name, route, listOrNone(g.Listed(prof, route)))
}

// routesWith lists the routes on which a table has an entry for name.
func routesWith(g *plan.Graph, table int, name string) []plan.Route {
	var out []plan.Route
	for _, e := range g.Tables[table].Entries {
		if e.Model == name && !slices.Contains(out, e.Route) {
			out = append(out, e.Route)
		}
	}
	return out
}

func routeNames(rs []plan.Route) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
