package compiler

import (
	"slices"
	"strings"
	"time"
)

// now is the clock claims are dated against; tests may pin it.
var now = time.Now

// warnDead reports policy that compiles but can never take effect: names
// that match nothing, failover targets that are never candidates, a
// catalog nobody can reach. Planning has run, so the catalog's tables are
// complete; a profile that serves nothing is found while planning it.
func (c *compiler) warnDead() {
	if len(c.src.Profiles) == 0 {
		c.labelWarnf(path("providers"), "no profiles, so no key can reach any provider; add a profile and a key that names it")
	}
	for _, name := range sortedKeys(c.src.Profiles) {
		c.warnAllowedModels(name, c.src.Profiles[name].AllowedModels)
	}
	for _, name := range sortedKeys(c.src.Providers) {
		p := c.src.Providers[name]
		for _, ch := range sortedKeys(p.Channels) {
			c.warnGate(name, ch, p)
		}
		c.warnFailover(name, p)
		c.warnProviderAuth(name, p)
	}
	c.warnUnused()
	c.warnServices()
}

// warnUnused reports budgets no profile names (a budget is charged only
// through a profile) and pools no provider reaches.
func (c *compiler) warnUnused() {
	named := map[string]bool{}
	for _, p := range c.src.Profiles {
		for _, b := range slices.Concat(p.Budgets, p.AgentBudgets) {
			named[b] = true
		}
	}
	for i, b := range c.src.Budgets {
		if !named[b.Name] {
			c.labelWarnf(path("budgets", i), "budget %q is named by no profile, so nothing is ever charged to it; list it in a profile's budgets", b.Name)
		}
	}
	used := map[string]bool{}
	for _, p := range c.src.Providers {
		if p.Pool != nil {
			used[*p.Pool] = true
		}
	}
	for _, name := range sortedKeys(c.src.Pools) {
		if !used[name] {
			c.labelWarnf(path("pools", name), "pool %q is used by no provider, so nothing is sent to it; name it in a provider's pool", name)
		}
	}
}

// warnAllowedModels reports allowed_models patterns that match no name and
// no upstream model of any provider: planning compares both.
func (c *compiler) warnAllowedModels(profile string, pats []string) {
	var models []string
	for _, p := range c.src.Providers {
		models = append(models, sortedKeys(p.Models)...)
	}
	for i, pat := range pats {
		if pat == "*" || matchesAny(pat, c.cat.names) || matchesAny(pat, models) {
			continue
		}
		c.warnf(path("profiles", profile, "allowed_models", i), "%q matches no model or alias any provider serves, so it allows nothing (served: %s)%s",
			pat, listOf(c.cat.names), didYouMean(pat, c.cat.names))
	}
}

// warnGate reports a channel gate's patterns that match none of its
// provider's models: the gate is applied to the upstream model.
func (c *compiler) warnGate(provider, channel string, p srcProvider) {
	models := sortedKeys(p.Models)
	for i, pat := range p.Channels[channel].Models {
		if matchesAny(pat, models) {
			continue
		}
		c.warnf(path("providers", provider, "channels", channel, "models", i), "%q matches no model provider %q serves, so it admits nothing (serves: %s)%s",
			pat, provider, listOf(models), didYouMean(pat, models))
	}
}

// warnFailover reports a failover list that is never read (its provider is
// nobody's primary) and targets that serve none of the names the list is
// read for: such a target is skipped as not_served on every request.
func (c *compiler) warnFailover(name string, p srcProvider) {
	if p.Failover == nil || len(p.Failover.To) == 0 {
		return
	}
	self := c.cat.providers[name]
	var names []string
	for _, n := range c.cat.names {
		if c.cat.primary[n] == self {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		c.labelWarnf(path("providers", name, "failover"), "provider %q is the primary of no name, so its failover list is never read "+
			"(a list is read only when its provider is a name's primary; see primary)", name)
		return
	}
	for i, t := range p.Failover.To {
		j, ok := c.cat.providers[t]
		if !ok || slices.ContainsFunc(names, func(n string) bool { _, ok := c.cat.resolution[j][n]; return ok }) {
			continue
		}
		c.warnf(path("providers", name, "failover", "to", i), "provider %q serves none of the names %q is primary for (%s), so it is never a candidate; "+
			"give it a model or alias of the same name, or remove it", t, name, strings.Join(names, ", "))
	}
}

func matchesAny(pat string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return matchAny([]string{pat}, n) })
}
