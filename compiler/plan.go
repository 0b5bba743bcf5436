package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
)

// Skip reasons the compiler gives; access rules add their own codes.
const (
	reasonModelDenied   = "model_denied"
	reasonFidelityLoss  = "fidelity_loss"
	reasonPoolSubset    = "pool_subset_missing"
	reasonNotServed     = "not_served"
	reasonRouteUnserved = "route_unserved"
)

// envelope is what a profile lets through, in the order it is applied.
type envelope struct {
	name    string
	allowed []string // nil: any model
	require plan.CapSet
	subset  string
	// rules are the static access rules, deployment-wide first.
	rules []staticRule
}

// planner holds what planning shares across profiles.
type planner struct {
	*compiler
	progs  *expr.Programs
	in     *interner
	failed map[string]bool // rules whose evaluation already failed
	// chains[p] is provider p followed by its failover list: the providers
	// tried for a name whose primary is p.
	chains [][]int
	// cands, skips and held are reused across candidates calls.
	cands, held []plan.Candidate
	skips       []plan.Skip
}

// plan builds every profile's table of (route, name) -> plan, the keys that
// point at profiles, and the deduplicated lists the tables reference.
func (c *compiler) plan() error {
	progs, err := expr.Load(c.g.CEL)
	if err != nil {
		return fmt.Errorf("loading the compiled expressions: %w", err)
	}
	p := &planner{compiler: c, progs: progs, in: newInterner(c.g), failed: map[string]bool{}}
	for i := range c.g.Providers {
		p.chains = append(p.chains, append([]int{i}, c.g.Providers[i].Failover.To...))
	}
	c.g.OnFidelityLoss = c.src.OnFidelityLoss
	profiles := map[string]int{}
	for i, name := range sortedKeys(c.src.Profiles) {
		profiles[name] = i
		c.g.Profiles = append(c.g.Profiles, p.profile(name))
	}
	keys := slices.Clone(c.src.Keys)
	slices.SortStableFunc(keys, func(a, b srcKey) int { return strings.Compare(a.Name, b.Name) })
	c.g.Keys = []plan.Key{}
	for _, k := range keys {
		c.g.Keys = append(c.g.Keys, plan.Key{Name: k.Name, Hash: k.Hash, Profile: profiles[k.Profile]})
	}
	return nil
}

// profile builds one profile and plans its table.
func (p *planner) profile(name string) plan.Profile {
	src := p.src.Profiles[name]
	out := plan.Profile{
		Name: name, AllowedModels: src.AllowedModels, PoolSubset: deref(src.PoolSubset),
		OnFidelityLoss: p.src.OnFidelityLoss, Rules: p.profileRules[name],
	}
	if src.OnFidelityLoss != nil {
		out.OnFidelityLoss = *src.OnFidelityLoss
	}
	out.RequireCaps = capSet(src.RequireCaps)
	p.profileServices(&out, src)
	for _, b := range src.Budgets {
		out.Budgets = append(out.Budgets, slices.IndexFunc(p.g.Budgets, func(x plan.Budget) bool { return x.Name == b }))
	}
	env := envelope{name: name, allowed: src.AllowedModels, require: out.RequireCaps, subset: out.PoolSubset}
	if n := len(p.g.Rules) + len(out.Rules); n > plan.MaxProfileRules {
		p.labelErrorf(path("profiles", name, "access_rules"),
			"holds the profile to %d access rules with the deployment's; at most %d can be told apart when one is suspended", n, plan.MaxProfileRules)
		return out
	}
	env.rules = append(staticRules(path("access_rules"), p.g.Rules, 0), staticRules(path("profiles", name, "access_rules"), out.Rules, len(p.g.Rules))...)
	out.Table = p.table(env)
	return out
}

// table plans every (route, name) for one envelope and returns the index of
// the (shared) table. Iteration is routes in plan.Routes order, then names
// sorted, so shared lists get the same indexes on every build. It also
// refuses an envelope that leaves a name with no candidate on any route
// because of require_caps, and warns of one that serves nothing at all.
func (p *planner) table(env envelope) int {
	var entries []plan.Entry
	fates := make(map[string]*fate, len(p.cat.names))
	for ri, route := range plan.Routes {
		for _, name := range p.cat.names {
			f := fates[name]
			if f == nil {
				f = &fate{}
				fates[name] = f
			}
			cands, skips, denied := p.candidates(env, ri, name, f)
			f.served = f.served || len(cands) > 0
			if len(cands) == 0 && !envelopeSkips(skips) {
				continue
			}
			pl := plan.Plan{
				Candidates: p.in.candidates(cands), Skips: p.in.skips(skips),
				NativeOnly: nativeOnly(cands), Listed: len(cands) > 0,
			}
			if denied != 0 {
				pl.Denied, pl.WithDenied = denied, p.in.candidates(p.held)
			}
			entries = append(entries, plan.Entry{Route: route, Model: name, Plan: p.in.plan(pl)})
		}
	}
	p.unreachable(env, fates)
	plan.SortEntries(entries)
	return p.in.table(entries)
}

// fate is what became of one name's candidates under an envelope, over
// every route: whether any survived, and if not, who removed them.
type fate struct {
	served bool
	// lost is what the channels require_caps alone removed lack (those
	// a rule would have denied anyway are not counted: the rule decided).
	lost plan.CapSet
	// kept are the rules (indexes into envelope.rules) that denied a
	// candidate require_caps let through; denied, every rule that denied
	// any candidate.
	kept, denied []int
	// subset is set when pool_subset removed a candidate.
	subset bool
}

// unreachable reports names require_caps leaves with no candidate, one
// line per cause: require_caps itself when no channel keeps the
// capabilities, or the rules that deny the channels that do. A name the
// rules deny outright is what the rules are for and is not reported; a
// profile whose rules leave it nothing at all is warned of.
func (p *planner) unreachable(env envelope, fates map[string]*fate) {
	type cause struct {
		rules string // the kept rules, by index
		lost  plan.CapSet
	}
	groups := map[cause][]string{}
	var causes []cause
	served, subset := false, false
	var denied []int
	for _, name := range p.cat.names {
		f := fates[name]
		served, subset = served || f.served, subset || f.subset
		for _, r := range f.denied {
			if !slices.Contains(denied, r) {
				denied = append(denied, r)
			}
		}
		if f.served || f.lost == 0 {
			continue
		}
		slices.Sort(f.kept)
		k := cause{rules: fmt.Sprint(f.kept), lost: f.lost}
		if _, seen := groups[k]; !seen {
			causes = append(causes, k)
		}
		groups[k] = append(groups[k], name)
	}
	for _, k := range causes {
		names, lost := quoteAll(groups[k]), strings.Join(k.lost.Names(), ", ")
		them := verb(len(groups[k]), "it", "them")
		f := fates[groups[k][0]]
		if len(f.kept) == 0 {
			p.labelErrorf(path("profiles", env.name, "require_caps"),
				"leaves %s with no candidate on any route: every channel that could serve %s drops %s", names, them, lost)
			continue
		}
		e := Error{Msg: fmt.Sprintf("%s %s every channel that keeps %s, which require_caps needs: %s %s left with no candidate on any route",
			rulesNamed(env, f.kept), verb(len(f.kept), "denies", "deny"), lost, names, verb(len(groups[k]), "is", "are"))}
		for i, r := range f.kept {
			if i == 0 {
				e.Pos, e.Path = p.l.at(env.rules[r].at), pathString(env.rules[r].at)
			} else {
				e.Also = append(e.Also, p.l.at(env.rules[r].at))
			}
		}
		p.errs = append(p.errs, e)
	}
	if !served && len(denied) > 0 {
		slices.Sort(denied)
		msg := fmt.Sprintf("profile %q can serve nothing: %s %s every candidate of every model it allows",
			env.name, rulesNamed(env, denied), verb(len(denied), "denies", "deny"))
		if subset {
			msg = fmt.Sprintf("profile %q can serve nothing: pool_subset and %s leave no candidate for any model it allows",
				env.name, rulesNamed(env, denied))
		}
		w := Error{Pos: p.l.label(path("profiles", env.name)), Path: pathString(path("profiles", env.name)), Warning: true, Msg: msg}
		for _, r := range denied {
			w.Also = append(w.Also, p.l.at(env.rules[r].at))
		}
		p.warns = append(p.warns, w)
	}
}

// rulesNamed names rules for a message: `access rule "a"`,
// `access rules "a", "b"`.
func rulesNamed(env envelope, idx []int) string {
	names := make([]string, len(idx))
	for i, r := range idx {
		names[i] = env.rules[r].Name
	}
	return verb(len(names), "access rule ", "access rules ") + quoteAll(names)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// verb picks the singular or plural form for n subjects.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// envelopeSkips reports whether skips say something the profile decided
// (a plan worth keeping though empty) rather than only that the name is
// not for this profile or not on this route.
func envelopeSkips(skips []plan.Skip) bool {
	for _, s := range skips {
		switch s.Reason {
		case reasonModelDenied, reasonNotServed, reasonRouteUnserved:
		default:
			return true
		}
	}
	return false
}

// nativeOnly reports whether every candidate is a native channel of the
// inbound dialect (a route's options only hold channels of its dialect,
// and translation candidates are their own tier), so the capability read
// can be skipped.
func nativeOnly(cands []plan.Candidate) bool {
	for _, c := range cands {
		if c.Tier != plan.TierNative {
			return false
		}
	}
	return true
}

// candidates walks the primary and then its failover list, in order, and
// sorts every way each provider could serve (route, name) into candidates
// and static skips. Those only static rules deny are also kept, marked, in
// p.held beside the candidates when denied (every rule denying one) is not
// zero. The returned slices are the planner's buffers, valid until the
// next call; the interner copies what it keeps.
func (p *planner) candidates(env envelope, ri int, name string, f *fate) ([]plan.Candidate, []plan.Skip, plan.RuleSet) {
	route := plan.Routes[ri]
	p0 := p.cat.primary[name]
	cands, skips, held := p.cands[:0], p.skips[:0], p.held[:0]
	var denied plan.RuleSet
	for _, prov := range p.chains[p0] {
		m, ok := p.cat.resolution[prov][name]
		if !ok {
			skips = append(skips, plan.Skip{Provider: prov, Channel: -1, Reason: reasonNotServed})
			continue
		}
		opts := p.cat.routes[prov][ri]
		usable := func(o option) bool { return o.admits(m) && p.cat.serves(prov, m, o.translate.Upstream(route)) }
		switch {
		case !slices.ContainsFunc(opts, usable):
			skips = append(skips, plan.Skip{Provider: prov, Channel: -1, Model: m, Reason: reasonRouteUnserved})
			continue
		case env.allowed != nil && !matchAny(env.allowed, name) && !matchAny(env.allowed, m):
			skips = append(skips, plan.Skip{Provider: prov, Channel: -1, Model: m, Reason: reasonModelDenied})
			continue
		}
		translated := -1 // the channel a translated candidate rides, once one is taken
		for _, o := range opts {
			if !usable(o) || (o.tier == plan.TierTranslation && o.channel == translated) {
				continue
			}
			c := plan.Candidate{Provider: prov, Channel: o.channel, Tier: o.tier, Model: m, Translate: o.translate,
				Preserves: o.preserves, Origin: o.origin, Primary: prov == p0}
			s, skipped := p.admit(env, route, name, &c, f)
			if s.Rules != 0 {
				c.Denied, denied = s.Rules, denied|s.Rules
				held = append(held, c)
			}
			if skipped {
				skips = append(skips, s)
				continue
			}
			cands, held = append(cands, c), append(held, c)
			if o.tier == plan.TierTranslation {
				translated = o.channel
			}
		}
	}
	p.cands, p.skips, p.held = cands, skips, held
	return cands, skips, denied
}

// admit applies the profile's envelope to one candidate: require_caps,
// pool_subset, then the static rules, noting in f who removed it.
func (p *planner) admit(env envelope, route plan.Route, name string, c *plan.Candidate, f *fate) (plan.Skip, bool) {
	skip := plan.Skip{Provider: c.Provider, Channel: c.Channel, Model: c.Model, Translate: c.Translate}
	prov := &p.g.Providers[c.Provider]
	// Rules are read even for a candidate require_caps removes, so that a
	// name the rules deny outright is not blamed on require_caps.
	attrs := expr.Attrs{Route: string(route), Model: name, UpstreamModel: c.Model, Profile: env.name,
		Provider: prov.Name, Channel: prov.Channels[c.Channel].Name}
	rule, all := p.denyingRules(env, attrs)
	if rule >= 0 && !slices.Contains(f.denied, rule) {
		f.denied = append(f.denied, rule)
	}
	if missing := env.require &^ c.Preserves; missing != 0 {
		if rule < 0 {
			f.lost |= missing
		}
		skip.Reason, skip.Missing = reasonFidelityLoss, missing
		return skip, true
	}
	if env.subset != "" && prov.Pool >= 0 {
		if !slices.ContainsFunc(p.g.Pools[prov.Pool].Subsets, func(s plan.Subset) bool { return s.Name == env.subset }) {
			skip.Reason, f.subset = reasonPoolSubset, true
			return skip, true
		}
		c.PoolSubset = env.subset
	}
	if rule >= 0 {
		if !slices.Contains(f.kept, rule) {
			f.kept = append(f.kept, rule)
		}
		skip.Reason, skip.Rules = env.rules[rule].Code, all
		return skip, true
	}
	return skip, false
}

// admits reports whether the option's channel gate lets upstream model m
// through; no gate admits every model.
func (o *option) admits(m string) bool { return len(o.gate) == 0 || matchAny(o.gate, m) }

// matchAny reports whether name matches one of the patterns: an exact name
// or a prefix ending in *.
func matchAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if pat == name {
			return true
		}
	}
	return false
}
