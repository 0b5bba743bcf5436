package compiler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// catalog is what planning looks up: names to indexes, each provider's
// resolution of every public name, and which provider serves a name first.
type catalog struct {
	providers map[string]int
	pools     map[string]int
	// resolution[p][name] is the upstream model provider p sends for a
	// public name (the name itself for a model, the end of the alias chain
	// for an alias); absent when p does not serve the name.
	resolution []map[string]string
	names      []string
	primary    map[string]int
	// routes[p][r] are provider p's ways to serve route plan.Routes[r], in
	// attempt order, before any model gate is applied.
	routes [][][]option
	// modelRoutes[p][model] limits the upstream routes a model of provider
	// p answers on; a model absent from it answers on every route.
	modelRoutes []map[string][]plan.Route
}

// serves reports whether upstream model m of provider p answers on route r.
func (c *catalog) serves(p int, m string, r plan.Route) bool {
	routes, limited := c.modelRoutes[p][m]
	return !limited || slices.Contains(routes, r)
}

// option is one channel of a provider able to carry a route, natively or
// through a translator.
type option struct {
	channel   int
	tier      plan.Tier
	translate plan.Translation
	preserves plan.CapSet
	origin    string
	gate      []string
}

// resolve builds the graph's catalog half (providers, pools) and the lookup
// tables, reporting aliases that go nowhere, failover lists that name the
// wrong providers and names with no single primary.
func (c *compiler) resolve() {
	c.cat = catalog{providers: map[string]int{}, pools: map[string]int{}, primary: map[string]int{}}
	for i, name := range sortedKeys(c.src.Pools) {
		c.cat.pools[name] = i
		c.g.Pools = append(c.g.Pools, buildPool(name, c.src.Pools[name]))
	}
	names := sortedKeys(c.src.Providers)
	for i, name := range names {
		c.cat.providers[name] = i
	}
	c.overlays = c.overlayLayers()
	for _, name := range names {
		p := c.src.Providers[name]
		res := c.resolveAliases(name, p)
		c.cat.resolution = append(c.cat.resolution, res)
		c.cat.modelRoutes = append(c.cat.modelRoutes, modelRoutes(p))
		c.g.Providers = append(c.g.Providers, c.buildProvider(name, p, res))
	}
	for i, name := range names {
		c.g.Providers[i].Failover.To = c.failoverTargets(name, c.src.Providers[name])
		c.cat.routes = append(c.cat.routes, routeOptions(&c.g.Providers[i]))
	}
	c.resolvePrimaries()
	c.buildServices()
}

func modelRoutes(p srcProvider) map[string][]plan.Route {
	var out map[string][]plan.Route
	for name, m := range p.Models {
		if m.Routes == nil {
			continue
		}
		if out == nil {
			out = map[string][]plan.Route{}
		}
		for _, r := range m.Routes {
			out[name] = append(out[name], plan.Route(r))
		}
	}
	return out
}

// resolveAliases follows each alias of a provider to the model it ends at.
// A broken alias is reported once, where the chain breaks; a cycle once, at
// its alphabetically first member.
func (c *compiler) resolveAliases(name string, p srcProvider) map[string]string {
	res := make(map[string]string, len(p.Models)+len(p.Aliases))
	for m := range p.Models {
		res[m] = m
	}
	for _, a := range sortedKeys(p.Aliases) {
		if _, shadows := p.Models[a]; shadows {
			continue // reported by check
		}
		chain := []string{a}
		for cur := p.Aliases[a]; ; cur = p.Aliases[cur] {
			if _, ok := p.Models[cur]; ok {
				res[a] = cur
				break
			}
			if _, isAlias := p.Aliases[cur]; !isAlias {
				if len(chain) == 1 {
					models := sortedKeys(p.Models)
					c.errorf(path("providers", name, "aliases", a), "alias %q points at model %q that provider %q does not serve (serves: %s)%s",
						a, cur, name, listOf(models), didYouMean(cur, models))
				}
				break
			}
			if i := slices.Index(chain, cur); i >= 0 {
				if i == 0 && slices.Min(chain) == a {
					c.labelErrorf(path("providers", name, "aliases", a), "alias cycle: %s -> %s", strings.Join(chain, " -> "), a)
				}
				break
			}
			chain = append(chain, cur)
		}
	}
	return res
}

// failoverTargets resolves failover.to to provider indexes.
func (c *compiler) failoverTargets(name string, p srcProvider) []int {
	if p.Failover == nil {
		return nil
	}
	var to []int
	for i, t := range p.Failover.To {
		at := path("providers", name, "failover", "to", i)
		j, ok := c.cat.providers[t]
		switch {
		case !ok:
			known := sortedKeys(c.src.Providers)
			c.errorf(at, "unknown provider %q (known: %s)%s", t, listOf(known), didYouMean(t, known))
		case t == name:
			c.errorf(at, "provider %q cannot fail over to itself; its own retries cover that", name)
		case slices.Contains(to, j):
			c.errorf(at, "provider %q is listed twice", t)
		default:
			to = append(to, j)
		}
	}
	if i := slices.Index(p.Failover.On, plan.FailureTimeout); i >= 0 {
		var unbounded []string
		for _, t := range append([]string{name}, p.Failover.To...) {
			if q, ok := c.src.Providers[t]; ok && q.Timeout == nil && !slices.Contains(unbounded, strconv.Quote(t)) {
				unbounded = append(unbounded, strconv.Quote(t))
			}
		}
		if len(unbounded) > 0 {
			c.errorf(path("providers", name, "failover", "on", i),
				"failing over on timeout needs every candidate to carry its own timeout; without one: %s", strings.Join(unbounded, ", "))
		}
	}
	return to
}

// resolvePrimaries collects the public names and decides, for each, which
// provider is tried first.
func (c *compiler) resolvePrimaries() {
	servers := map[string][]int{}
	for p, res := range c.cat.resolution {
		for n := range res {
			servers[n] = append(servers[n], p)
		}
	}
	c.cat.names = sortedKeys(servers)
	c.g.Names = c.cat.names
	// suggested are names a misspelt primary key was taken for: the typo
	// is the one error, not also the name it leaves without a primary.
	suggested := map[string]bool{}
	for _, n := range sortedKeys(c.src.Primary) {
		at, prov := path("primary", n), c.src.Primary[n]
		p, known := c.cat.providers[prov]
		switch {
		case known && !slices.Contains(servers[n], p) && hasAlias(c.src.Providers[prov], n),
			len(servers[n]) == 0 && c.declaresAlias(n):
			// The alias does not resolve, which is reported where its
			// chain breaks; saying the provider does not serve it would
			// send the operator to the wrong line.
		case len(servers[n]) == 0:
			if k, ok := closest(n, c.cat.names); ok {
				suggested[k] = true
			}
			c.labelErrorf(at, "no provider serves %q (known names: %s)%s", n, listOf(c.cat.names), didYouMean(n, c.cat.names))
		case !known:
			known := sortedKeys(c.src.Providers)
			c.errorf(at, "unknown provider %q (known: %s)%s", prov, listOf(known), didYouMean(prov, known))
		case !slices.Contains(servers[n], p):
			c.errorf(at, "provider %q does not serve %q (served by: %s)", prov, n, listOf(c.providerNames(servers[n])))
		default:
			c.cat.primary[n] = p
		}
	}
	for _, n := range c.cat.names {
		if _, ok := c.cat.primary[n]; ok || c.src.Primary[n] != "" || suggested[n] {
			continue
		}
		if len(servers[n]) == 1 {
			c.cat.primary[n] = servers[n][0]
			continue
		}
		e := Error{Msg: fmt.Sprintf("%q is served by several providers (%s); name the one tried first in primary: {%q: \"<provider>\"}",
			n, strings.Join(c.providerNames(servers[n]), ", "), n)}
		for i, p := range servers[n] {
			at := c.declaration(p, n)
			if i == 0 {
				e.Pos, e.Path = c.l.label(at), pathString(at)
			} else {
				e.Also = append(e.Also, c.l.label(at))
			}
		}
		c.errs = append(c.errs, e)
	}
}

// declaresAlias reports whether some provider declares n as an alias.
func (c *compiler) declaresAlias(n string) bool {
	for _, p := range c.src.Providers {
		if hasAlias(p, n) {
			return true
		}
	}
	return false
}

func hasAlias(p srcProvider, n string) bool {
	_, ok := p.Aliases[n]
	return ok
}

func (c *compiler) providerNames(idx []int) []string {
	out := make([]string, len(idx))
	for i, p := range idx {
		out[i] = c.g.Providers[p].Name
	}
	return out
}

// buildProvider renders a provider for the graph; Failover.To is filled
// once every provider has an index.
func (c *compiler) buildProvider(name string, p srcProvider, res map[string]string) plan.Provider {
	out := plan.Provider{
		Name: name, Pool: -1, StreamUsage: p.StreamUsage,
		BaseURL: deref(p.BaseURL), CredentialEnv: deref(p.CredentialEnv), Auth: deref(p.Auth),
	}
	if p.Pool != nil {
		if i, ok := c.cat.pools[*p.Pool]; ok {
			out.Pool = i
		}
	}
	out.Headers, out.Query = pairs(p.Headers), pairs(p.Query)
	out.UsageAPI = buildUsageAPI(p.UsageAPI)
	out.TLS = buildTLS(p.TLS)
	for _, m := range sortedKeys(p.Models) {
		out.Models = append(out.Models, plan.Model{Name: m, MaxTokens: p.Models[m].MaxTokens})
	}
	for _, a := range sortedKeys(p.Aliases) {
		if target, ok := res[a]; ok && target != a {
			out.Aliases = append(out.Aliases, plan.Alias{Name: a, Target: target})
		}
	}
	for _, ch := range sortedKeys(p.Channels) {
		out.Channels = append(out.Channels, c.buildChannel(name, ch, p.Channels[ch]))
	}
	out.TimeoutMS = millis(p.Timeout)
	if r := p.Retries; r != nil {
		out.Retry = plan.Retry{Max: r.Max, BackoffMS: millis(r.Backoff), On: r.On}
	}
	if p.Failover != nil {
		out.Failover.On = p.Failover.On
	}
	if cb := p.Circuit; cb != nil {
		out.Circuit = &plan.Circuit{Failures: cb.Failures, CoolDownMS: millis(&cb.CoolDown), HalfOpenProbes: cb.HalfOpenProbes}
	}
	return out
}

func (c *compiler) buildChannel(provider, name string, ch srcChannel) plan.Channel {
	out := plan.Channel{
		Name: name, Dialect: plan.Dialect(ch.Dialect), Tier: plan.Tier(ch.Tier),
		BaseURL: deref(ch.BaseURL), ModelGate: ch.Models,
		CredentialEnv: deref(ch.CredentialEnv), Auth: deref(ch.Auth),
		Headers: pairs(ch.Headers), Query: pairs(ch.Query),
	}
	// Routes in canonical order whatever order they were written in.
	for _, r := range plan.Routes {
		if r.Dialect() == out.Dialect && (ch.Routes == nil && r.DefaultRoute() || slices.Contains(ch.Routes, string(r))) {
			out.Routes = append(out.Routes, r)
		}
	}
	switch out.Tier {
	case plan.TierNative:
		out.Preserves, out.Origin = plan.AllCaps, "native"
	default:
		base := layer{date: path("providers", provider, "channels", name, "verified_at"), claim: plan.Claim{
			Preserves: capSet(ch.Preserves), Origin: c.baseOrigin(provider, name, ch),
			VerifiedAt: deref(ch.VerifiedAt), VerifiedBy: deref(ch.VerifiedBy),
		}}
		win, overrode := c.winningClaim(provider, name, base, c.overlays[[2]string{provider, name}])
		out.Preserves, out.Origin, out.VerifiedAt, out.VerifiedBy = win.Preserves, win.Origin, win.VerifiedAt, win.VerifiedBy
		out.Overrode = overrode
	}
	return out
}

// pairs lists a header or query map as name/value pairs, sorted by name.
func pairs(m map[string]string) []plan.Header {
	var out []plan.Header
	for _, k := range sortedKeys(m) {
		out = append(out, plan.Header{Name: k, Value: m[k]})
	}
	return out
}

func buildPool(name string, p srcPool) plan.Pool {
	out := plan.Pool{Name: name, DNS: p.DNS, Picker: deref(p.Picker), Scheme: p.Scheme}
	if p.Picker != nil {
		out.PickerCAFile, out.PickerPlaintext = deref(p.PickerCA), p.PickerPlaintext != nil && *p.PickerPlaintext
		out.PickerTimeoutMS, out.PickerFailure = plan.DefaultPickerTimeoutMS, plan.PickerFailClosed
		if p.PickerTimeout != nil {
			out.PickerTimeoutMS = max(millis(p.PickerTimeout), 1)
		}
		if p.PickerFailure != nil {
			out.PickerFailure = plan.PickerFailure(*p.PickerFailure)
		}
	}
	for _, s := range sortedKeys(p.Subsets) {
		out.Subsets = append(out.Subsets, plan.Subset{Name: s, DNS: p.Subsets[s].DNS})
	}
	return out
}

// routeOptions lists, for every route, the provider's channels able to
// carry it: native channels of the route's dialect, then compat ones, and
// only when no channel of that dialect carries the route, a translator over
// a native channel of the other (a compat endpoint that serves only chat
// completions leaves Responses to the translator).
func routeOptions(p *plan.Provider) [][]option {
	out := make([][]option, len(plan.Routes))
	for ri, r := range plan.Routes {
		for _, tier := range []plan.Tier{plan.TierNative, plan.TierProviderCompat} {
			for i, ch := range p.Channels {
				if ch.Dialect == r.Dialect() && ch.Tier == tier && slices.Contains(ch.Routes, r) {
					out[ri] = append(out[ri], option{channel: i, tier: tier, preserves: ch.Preserves, origin: ch.Origin, gate: ch.ModelGate})
				}
			}
		}
		if len(out[ri]) > 0 {
			continue
		}
		for i, ch := range p.Channels {
			for _, pair := range translationsFor(r) {
				if ch.Tier == plan.TierNative && slices.Contains(ch.Routes, pair.Upstream(r)) {
					out[ri] = append(out[ri], option{channel: i, tier: plan.TierTranslation, translate: pair,
						preserves: plan.AllCaps &^ plan.TranslationLosses[pair], origin: "translation:" + string(pair), gate: ch.ModelGate})
				}
			}
		}
	}
	return out
}

// translationsFor lists the wired translators of inbound route r in the
// order a channel is tried with them; only chat completions, responses and
// messages translate. A channel carries a request through the first of
// them whose upstream route it serves for the model and the profile admits
// (the planner takes one per channel): messages prefer chat completions,
// the older pair, and ride responses when a model answers only there.
func translationsFor(r plan.Route) []plan.Translation {
	switch r {
	case plan.RouteChatCompletions:
		return []plan.Translation{plan.TranslateOpenAIAnthropic}
	case plan.RouteResponses:
		return []plan.Translation{plan.TranslateResponsesAnthropic}
	case plan.RouteMessages:
		return []plan.Translation{plan.TranslateAnthropicOpenAI, plan.TranslateAnthropicResponses}
	}
	return nil
}

// declaration is the path where provider p declares the public name n.
func (c *compiler) declaration(p int, n string) cue.Path {
	name := c.g.Providers[p].Name
	if _, ok := c.src.Providers[name].Models[n]; ok {
		return path("providers", name, "models", n)
	}
	return path("providers", name, "aliases", n)
}

// capSet converts capability names checked by check.go.
func capSet(names []string) plan.CapSet {
	var set plan.CapSet
	for _, n := range names {
		if cp, ok := plan.ParseCap(n); ok {
			set |= plan.Of(cp)
		}
	}
	return set
}

// buildTLS renders a tls block; nil when none is written.
func buildTLS(t *srcTLS) *plan.TLS {
	if t == nil {
		return nil
	}
	return &plan.TLS{CAFile: deref(t.CAFile), CertFile: deref(t.CertFile), KeyFile: deref(t.KeyFile), ServerName: deref(t.ServerName)}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// millis converts a duration checked by check.go; an invalid one is 0.
func millis(s *string) int64 {
	if s == nil {
		return 0
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0
	}
	return d.Milliseconds()
}
