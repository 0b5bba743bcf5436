package suspend

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Rules is what the request path reads of rule suspensions: per profile of
// the serving graph, the set of its access rules suspended now (see
// plan.RuleSet). The sets are derived from the Store once per change of
// its suspensions, so a request reads them with a few atomic loads,
// whether or not a rule is suspended. It also counts, per rule, the
// decisions a suspension changed, for the status. With no Store nothing
// is suspended.
type Rules struct {
	store Store
	cur   atomic.Pointer[ruleSets]
	mu    sync.Mutex
	lifts map[string]*lifts // by rule name
}

// ruleSets is what Rules derived from the Store at one generation, for
// one graph: sets[profile], nil when no rule is suspended.
type ruleSets struct {
	g    *plan.Graph
	gen  uint64
	sets []plan.RuleSet
}

// lifts counts the decisions one rule's suspension changed.
type lifts struct {
	n    uint64
	last time.Time
}

// NewRules reads rule suspensions from store (nil for none).
func NewRules(store Store) *Rules { return &Rules{store: store, lifts: map[string]*lifts{}} }

// Of is the set of profile's rules in g suspended now.
func (r *Rules) Of(g *plan.Graph, profile int) plan.RuleSet {
	if r.store == nil {
		return 0
	}
	gen := r.store.SuspensionGeneration()
	s := r.cur.Load()
	if s == nil || s.g != g || s.gen != gen {
		s = r.derive(g, gen)
	}
	if s.sets == nil {
		return 0
	}
	return s.sets[profile]
}

// derive reads the rule suspensions of generation gen (or a later one:
// then the next call derives again) into per-profile sets.
func (r *Rules) derive(g *plan.Graph, gen uint64) *ruleSets {
	s := &ruleSets{g: g, gen: gen}
	var names []string
	for _, sus := range r.store.Suspensions() {
		if sus.Kind == KindRule {
			names = append(names, sus.Name)
		}
	}
	if len(names) > 0 {
		s.sets = make([]plan.RuleSet, len(g.Profiles))
		for p := range g.Profiles {
			s.sets[p] = g.RulesNamed(p, func(name string) bool { return slices.Contains(names, name) })
		}
	}
	r.cur.Store(s)
	return s
}

// Lifted counts one decision of profile in g that served the candidates
// in lifted although suspended rules deny them (route.Decision.Lifted):
// once per rule.
func (r *Rules) Lifted(g *plan.Graph, profile int, lifted []plan.Skip, now time.Time) {
	var all plan.RuleSet
	for _, l := range lifted {
		all |= l.Rules
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for ; all != 0; all &= all - 1 {
		name := g.ProfileRule(profile, all.First()).Name
		l := r.lifts[name]
		if l == nil {
			l = &lifts{}
			r.lifts[name] = l
		}
		l.n++
		l.last = now
	}
}

// RuleStatus is one rule suspension as the status shows it: the
// suspension, the rules of that name in the serving policy, and the
// decisions of this node it changed.
type RuleStatus struct {
	Suspension
	// Rules are the access rules the name stands for: where each is
	// declared, its code, and whether the build folded it into the plans.
	Rules []RuleDecl `json:"rules"`
	// Lifted counts this node's requests served by a candidate the rule
	// denies, since pistrad started; LastLifted is the latest.
	Lifted     uint64    `json:"lifted"`
	LastLifted time.Time `json:"last_lifted,omitzero"`
}

// RuleDecl is one access rule a suspension's name stands for.
type RuleDecl struct {
	// Profile is the profile whose own rule it is; empty for a
	// deployment-wide rule.
	Profile string `json:"profile,omitempty"`
	Code    string `json:"code"`
	// Static is true when the build folded the rule into the plans (it
	// reads no request fact); its denials are restored from them.
	Static bool `json:"static"`
}

// Status lists the rule suspensions in force, each with the rules of g it
// stands for and the decisions it changed.
func (r *Rules) Status(g *plan.Graph) []RuleStatus {
	if r.store == nil {
		return nil
	}
	var out []RuleStatus
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.store.Suspensions() {
		if s.Kind != KindRule {
			continue
		}
		st := RuleStatus{Suspension: s, Rules: ruleDecls(g, s.Name)}
		if l := r.lifts[s.Name]; l != nil {
			st.Lifted, st.LastLifted = l.n, l.last
		}
		out = append(out, st)
	}
	return out
}

func ruleDecls(g *plan.Graph, name string) []RuleDecl {
	out := []RuleDecl{}
	add := func(profile string, rules []plan.Rule) {
		for _, r := range rules {
			if r.Name == name {
				out = append(out, RuleDecl{Profile: profile, Code: r.Code, Static: r.Static})
			}
		}
	}
	add("", g.Rules)
	for _, p := range g.Profiles {
		add(p.Name, p.Rules)
	}
	return out
}
