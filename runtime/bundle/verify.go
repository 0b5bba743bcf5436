package bundle

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// Verify checks every index in g against the list it points into, every
// vocabulary value against plan's list of them, and that tables and names
// are in the order Lookup and Known search them. The error names the first
// bad value by its path in bundle.json.
func Verify(g *plan.Graph) error {
	for _, check := range []func(*plan.Graph) error{
		verifyDeployment, verifyProviders, verifyPools, verifyProfiles, verifyKeys, verifyBudgets,
		verifyCandidates, verifySkips, verifyPlans, verifyNames, verifyTables,
	} {
		if err := check(g); err != nil {
			return err
		}
	}
	return verifyRules("rules", g.Rules, g.CEL)
}

// outOfRange describes an index i that is not below n.
func outOfRange(field string, i, n int) error {
	return fmt.Errorf("%s: index %d out of range (%d defined)", field, i, n)
}

func inRange(i, n int) bool { return i >= 0 && i < n }

// vocabulary is one of plan's closed string types.
type vocabulary interface {
	~string
	Valid() bool
}

// known checks a vocabulary value: the runtime branches on these, and one
// it does not know would be misread (an unknown on_fidelity_loss rejects).
func known[T vocabulary](field string, v T, all []T) error {
	if v.Valid() {
		return nil
	}
	return fmt.Errorf("%s: unknown value %q (known: %s)", field, v, strings.Join(plan.Names(all), ", "))
}

// knownOrEmpty is known for a value that may be left unset.
func knownOrEmpty[T vocabulary](field string, v T, all []T) error {
	if v == "" {
		return nil
	}
	return known(field, v, all)
}

// knownEach checks a list of vocabulary values.
func knownEach[T vocabulary](field string, values, all []T) error {
	for i, v := range values {
		if err := known(fmt.Sprintf("%s[%d]", field, i), v, all); err != nil {
			return err
		}
	}
	return nil
}

func verifyDeployment(g *plan.Graph) error {
	return known("on_fidelity_loss", g.OnFidelityLoss, plan.LossActions)
}

func verifyProviders(g *plan.Graph) error {
	for i, p := range g.Providers {
		at := fmt.Sprintf("providers[%d] (%s)", i, p.Name)
		if p.Pool != -1 && !inRange(p.Pool, len(g.Pools)) {
			return outOfRange(at+".pool", p.Pool, len(g.Pools))
		}
		if err := cmp.Or(
			knownOrEmpty(at+".auth", p.Auth, plan.AuthSchemes),
			knownEach(at+".retry.on", p.Retry.On, plan.FailureClasses),
			knownEach(at+".failover.on", p.Failover.On, plan.FailureClasses),
		); err != nil {
			return err
		}
		if err := verifyCircuit(at+".circuit", p.Circuit); err != nil {
			return err
		}
		for j, ch := range p.Channels {
			if err := knownOrEmpty(fmt.Sprintf("%s.channels[%d] (%s).auth", at, j, ch.Name), ch.Auth, plan.AuthSchemes); err != nil {
				return err
			}
		}
		for j, to := range p.Failover.To {
			if !inRange(to, len(g.Providers)) {
				return outOfRange(fmt.Sprintf("%s.failover.to[%d]", at, j), to, len(g.Providers))
			}
			if to == i {
				return fmt.Errorf("%s.failover.to[%d]: a provider cannot fail over to itself", at, j)
			}
		}
	}
	return nil
}

// verifyPools holds each picker to what the runtime dials it with: a
// bound on the pick and a failure mode, which only a picker has.
func verifyPools(g *plan.Graph) error {
	for i, p := range g.Pools {
		at := fmt.Sprintf("pools[%d] (%s)", i, p.Name)
		switch {
		case p.Picker == "" && (p.PickerFailure != "" || p.PickerTimeoutMS != 0 || p.PickerCAFile != "" || p.PickerPlaintext):
			return fmt.Errorf("%s: picker settings without a picker", at)
		case p.Picker == "":
		case p.PickerTimeoutMS <= 0:
			return fmt.Errorf("%s.picker_timeout_ms: %d, want a bound above 0", at, p.PickerTimeoutMS)
		default:
			if err := known(at+".picker_failure", p.PickerFailure, plan.PickerFailures); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifyCircuit holds a breaker to what the runtime can run: at least one
// failure to open, a cool-down, and a probe count that fits its state word.
func verifyCircuit(at string, c *plan.Circuit) error {
	switch {
	case c == nil:
		return nil
	case c.Failures < 1:
		return fmt.Errorf("%s.failures: %d; want at least 1", at, c.Failures)
	case c.CoolDownMS < 1:
		return fmt.Errorf("%s.cool_down_ms: %d; want at least 1", at, c.CoolDownMS)
	case c.HalfOpenProbes < 1 || c.HalfOpenProbes > plan.MaxHalfOpenProbes:
		return fmt.Errorf("%s.half_open_probes: %d; want 1 to %d", at, c.HalfOpenProbes, plan.MaxHalfOpenProbes)
	}
	return nil
}

func verifyProfiles(g *plan.Graph) error {
	for i, p := range g.Profiles {
		at := fmt.Sprintf("profiles[%d] (%s)", i, p.Name)
		if !inRange(p.Table, len(g.Tables)) {
			return outOfRange(at+".table", p.Table, len(g.Tables))
		}
		if err := known(at+".on_fidelity_loss", p.OnFidelityLoss, plan.LossActions); err != nil {
			return err
		}
		for j, b := range p.Budgets {
			if !inRange(b, len(g.Budgets)) {
				return outOfRange(fmt.Sprintf("%s.budgets[%d]", at, j), b, len(g.Budgets))
			}
		}
		if err := verifyRules(at+".rules", p.Rules, g.CEL); err != nil {
			return err
		}
		// A rule past the last bit of a RuleSet could never be suspended.
		if n := len(g.Rules) + len(p.Rules); n > plan.MaxProfileRules {
			return fmt.Errorf("%s.rules: held to %d access rules with the deployment's, more than %d", at, n, plan.MaxProfileRules)
		}
	}
	return nil
}

func verifyRules(at string, rules []plan.Rule, cel []plan.Expr) error {
	for i, r := range rules {
		if err := verifyExpr(fmt.Sprintf("%s[%d] (%s).expr", at, i, r.Name), r.Expr, cel, "rule"); err != nil {
			return err
		}
	}
	return nil
}

// verifyExpr checks that i indexes a CEL expression of the given kind.
func verifyExpr(field string, i int, cel []plan.Expr, kind string) error {
	if !inRange(i, len(cel)) {
		return outOfRange(field, i, len(cel))
	}
	if cel[i].Kind != kind {
		return fmt.Errorf("%s: expression %d is a %s expression, want %s", field, i, cel[i].Kind, kind)
	}
	return nil
}

func verifyKeys(g *plan.Graph) error {
	for i, k := range g.Keys {
		if !inRange(k.Profile, len(g.Profiles)) {
			return outOfRange(fmt.Sprintf("keys[%d] (%s).profile", i, k.Name), k.Profile, len(g.Profiles))
		}
	}
	return nil
}

func verifyBudgets(g *plan.Graph) error {
	for i, b := range g.Budgets {
		at := fmt.Sprintf("budgets[%d] (%s)", i, b.Name)
		if err := cmp.Or(
			known(at+".window", b.Window, plan.Windows),
			known(at+".per", b.Per, plan.BucketScopes),
			known(at+".cost_type", b.CostType, plan.CostTypes),
		); err != nil {
			return err
		}
		field := at + ".cost_expr"
		switch {
		case b.CostType == plan.CostCEL:
			if err := verifyExpr(field, b.CostExpr, g.CEL, "cost"); err != nil {
				return err
			}
		case b.CostExpr != -1:
			return fmt.Errorf("%s: is %d, want -1 for cost type %s", field, b.CostExpr, b.CostType)
		}
	}
	return nil
}

func verifyCandidates(g *plan.Graph) error {
	for i, list := range g.CandidateLists {
		for j, c := range list {
			at := fmt.Sprintf("candidate_lists[%d][%d]", i, j)
			if err := verifyChannel(g, at, c.Provider, c.Channel); err != nil {
				return err
			}
			if c.PoolSubset != "" && !hasSubset(g, g.Providers[c.Provider].Pool, c.PoolSubset) {
				return fmt.Errorf("%s.pool_subset: provider %s has no pool subset %q", at, g.Providers[c.Provider].Name, c.PoolSubset)
			}
		}
	}
	return nil
}

func verifySkips(g *plan.Graph) error {
	for i, list := range g.SkipLists {
		for j, s := range list {
			at := fmt.Sprintf("skip_lists[%d][%d]", i, j)
			if s.Channel == -1 {
				if !inRange(s.Provider, len(g.Providers)) {
					return outOfRange(at+".provider", s.Provider, len(g.Providers))
				}
				continue
			}
			if err := verifyChannel(g, at, s.Provider, s.Channel); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifyChannel checks a (provider, channel) pair of indexes.
func verifyChannel(g *plan.Graph, at string, provider, channel int) error {
	if !inRange(provider, len(g.Providers)) {
		return outOfRange(at+".provider", provider, len(g.Providers))
	}
	p := &g.Providers[provider]
	if !inRange(channel, len(p.Channels)) {
		return outOfRange(fmt.Sprintf("%s.channel (of provider %s)", at, p.Name), channel, len(p.Channels))
	}
	return nil
}

func hasSubset(g *plan.Graph, pool int, name string) bool {
	if !inRange(pool, len(g.Pools)) {
		return false
	}
	for _, s := range g.Pools[pool].Subsets {
		if s.Name == name {
			return true
		}
	}
	return false
}

func verifyPlans(g *plan.Graph) error {
	for i, p := range g.Plans {
		if !inRange(p.Candidates, len(g.CandidateLists)) {
			return outOfRange(fmt.Sprintf("plans[%d].candidates", i), p.Candidates, len(g.CandidateLists))
		}
		if !inRange(p.Skips, len(g.SkipLists)) {
			return outOfRange(fmt.Sprintf("plans[%d].skips", i), p.Skips, len(g.SkipLists))
		}
		if p.Denied != 0 && !inRange(p.WithDenied, len(g.CandidateLists)) {
			return outOfRange(fmt.Sprintf("plans[%d].with_denied", i), p.WithDenied, len(g.CandidateLists))
		}
	}
	return nil
}

// verifyTables checks plan indexes and that entries are strictly ordered by
// (route, model), the order plan.Lookup's binary search relies on.
func verifyTables(g *plan.Graph) error {
	for i, t := range g.Tables {
		for j, e := range t.Entries {
			at := fmt.Sprintf("tables[%d].entries[%d]", i, j)
			if !inRange(e.Plan, len(g.Plans)) {
				return outOfRange(at+".plan", e.Plan, len(g.Plans))
			}
			if j == 0 {
				continue
			}
			prev := t.Entries[j-1]
			if prev.Route > e.Route || prev.Route == e.Route && prev.Model >= e.Model {
				return fmt.Errorf("%s: (%s, %q) must sort after (%s, %q)", at, e.Route, e.Model, prev.Route, prev.Model)
			}
		}
		// RouteSets answer refusals; sets that disagree with the entries
		// would name the wrong routes.
		if want := plan.RouteSetsOf(g.Names, t.Entries); !slices.Equal(t.RouteSets, want) {
			return fmt.Errorf("tables[%d].route_sets: %v does not match the table's entries (want %v)", i, t.RouteSets, want)
		}
	}
	return nil
}

func verifyNames(g *plan.Graph) error {
	for i := 1; i < len(g.Names); i++ {
		if g.Names[i-1] >= g.Names[i] {
			return fmt.Errorf("names[%d]: %q must sort after %q", i, g.Names[i], g.Names[i-1])
		}
	}
	return nil
}
