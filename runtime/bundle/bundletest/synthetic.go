package bundletest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// Size is the shape of a synthetic policy.
type Size struct {
	Providers, Models, Profiles, Keys, Budgets int
}

// Large is the size the compiler's benchmark uses: 50 providers, 300
// models, 40 profiles, 100 keys, 20 budgets.
var Large = Size{Providers: 50, Models: 300, Profiles: 40, Keys: 100, Budgets: 20}

// Medium is big enough to share plans and tables, and small enough for
// tests under the race detector.
var Medium = Size{Providers: 12, Models: 40, Profiles: 8, Keys: 10, Budgets: 3}

// Synthetic builds a referentially valid graph of the given size, shaped
// like a compiled policy: every fifth provider is Anthropic with an
// OpenAI-compatible channel, every tenth is a self-hosted pool, each model
// is served by two providers (the second as failover), every provider has
// one alias, even profiles are unrestricted (sharing four tables by
// require_caps and route set) and odd ones allow a handful of models.
func Synthetic(s Size) *plan.Graph {
	b := &builder{GraphBuilder: testkit.NewGraph(hex64('f'))}
	b.providers(s)
	names := b.names()
	tables := map[string]int{}
	for p := range s.Profiles {
		prof := plan.Profile{Name: fmt.Sprintf("team-%02d", p), OnFidelityLoss: plan.LossReject, RequireCaps: plan.Of()}
		strict, noEmbed := p%4 >= 2, p%4 == 1 || p%4 == 3
		if strict {
			prof.RequireCaps = plan.Of(plan.CapUsageDetails)
		}
		allowed := names
		if p%2 == 1 {
			prefix := fmt.Sprintf("model-%02d", p%30)
			prof.AllowedModels = []string{prefix + "*"}
			allowed = filterPrefix(names, prefix)
		}
		key := fmt.Sprint(strict, noEmbed, prof.AllowedModels)
		t, ok := tables[key]
		if !ok {
			t = b.table(allowed, strict, noEmbed)
			tables[key] = t
		}
		prof.Table = t
		if s.Budgets > 0 {
			prof.Budgets = []int{p % s.Budgets}
		}
		b.Profile(prof)
	}
	for k := range s.Keys {
		b.Keys = append(b.Keys, plan.Key{Name: fmt.Sprintf("key-%03d", k), Hash: "sha256:" + hex64("0123456789abcdef"[k%16]), Profile: k % s.Profiles})
	}
	for i := range s.Budgets {
		b.Budgets = append(b.Budgets, plan.Budget{Name: fmt.Sprintf("budget-%02d", i), Limit: uint64(1000 * (i + 1)), Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostTotalToken, CostExpr: -1, CostPerCall: 1, CostPerSession: 1})
	}
	return sealed(b.Build())
}

type builder struct {
	*testkit.GraphBuilder
	// servers maps a public name to the providers serving it, primary first.
	servers map[string][]int
}

func (b *builder) providers(s Size) {
	b.servers = map[string][]int{}
	for i := range s.Providers {
		p := plan.Provider{Name: fmt.Sprintf("provider-%02d", i), Pool: -1, Auth: plan.AuthBearer, StreamUsage: true,
			CredentialEnv: fmt.Sprintf("PROVIDER_%02d_KEY", i), Retry: plan.Retry{Max: 1, BackoffMS: 100, On: []plan.FailureClass{plan.Failure5xx}},
			Failover: plan.Failover{To: []int{(i + 1) % s.Providers}, On: []plan.FailureClass{plan.Failure5xx, plan.Failure429}}}
		openAIRoutes := []plan.Route{plan.RouteChatCompletions, plan.RouteCompletions, plan.RouteEmbeddings, plan.RouteResponses}
		switch {
		case i%5 == 0:
			p.BaseURL, p.Auth = "https://api.anthropic.example", plan.AuthXAPIKey
			p.Channels = []plan.Channel{
				{Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative, Routes: []plan.Route{plan.RouteMessages}, Preserves: plan.AllCaps, Origin: "catalog.cue"},
				{Name: "compat", Dialect: plan.DialectOpenAI, Tier: plan.TierProviderCompat, Routes: openAIRoutes[:1], Preserves: plan.Of(plan.CapExtendedThinking),
					Origin: "overlay.cue", VerifiedAt: "2025-06-01", VerifiedBy: "https://docs.example/compat"},
			}
		case i%10 == 3:
			p.Pool, p.CredentialEnv = len(b.Pools), ""
			b.Pools = append(b.Pools, plan.Pool{Name: p.Name, DNS: p.Name + ".internal:8000", Scheme: "http"})
			p.Channels = []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative, Routes: openAIRoutes[:1], Preserves: plan.AllCaps, Origin: "pool.cue"}}
		default:
			p.BaseURL = fmt.Sprintf("https://api.provider-%02d.example/v1", i)
			p.Channels = []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative, Routes: openAIRoutes, Preserves: plan.AllCaps, Origin: "catalog.cue"}}
		}
		b.Provider(p)
	}
	for m := range s.Models {
		name := fmt.Sprintf("model-%03d", m)
		for _, pi := range []int{m % s.Providers, (m + 1) % s.Providers} {
			p := &b.Providers[pi]
			p.Models = append(p.Models, plan.Model{Name: name, MaxTokens: 4096})
			if len(p.Models) == 1 {
				p.Aliases = []plan.Alias{{Name: p.Name + "-latest", Target: name}}
				b.servers[p.Name+"-latest"] = []int{pi}
			}
			b.servers[name] = append(b.servers[name], pi)
		}
	}
}

func (b *builder) names() []string { return slices.Sorted(maps.Keys(b.servers)) }

// table adds one routing envelope over names.
func (b *builder) table(names []string, strict, noEmbed bool) int {
	var entries []plan.Entry
	for _, r := range plan.Routes {
		if noEmbed && r == plan.RouteEmbeddings {
			continue
		}
		for _, n := range names {
			cands, skips := b.candidates(n, r, strict)
			if len(cands) == 0 && len(skips) == 0 {
				continue
			}
			entries = append(entries, plan.Entry{Route: r, Model: n, Plan: b.plan(cands, skips, r)})
		}
	}
	return b.Table(entries...)
}

// candidates lists every channel of every server of name in attempt order
// (per provider: channels serving the route, then translations); under
// strict (usage_details required) lossy channels become skips.
func (b *builder) candidates(name string, r plan.Route, strict bool) ([]plan.Candidate, []plan.Skip) {
	var cands []plan.Candidate
	skips := []plan.Skip{}
	for rank, pi := range b.servers[name] {
		var xlate []plan.Candidate
		p := &b.Providers[pi]
		model := name
		for _, a := range p.Aliases {
			if a.Name == name {
				model = a.Target
			}
		}
		for ci, ch := range p.Channels {
			c := plan.Candidate{Provider: pi, Channel: ci, Tier: ch.Tier, Model: model, Preserves: ch.Preserves, Origin: ch.Origin, Primary: rank == 0}
			switch {
			case servesRoute(ch, r):
			case ch.Tier == plan.TierNative && r.Dialect() != ch.Dialect && r != plan.RouteEmbeddings && !r.Session():
				c.Tier = plan.TierTranslation
				c.Translate = plan.Translation(string(r.Dialect()) + "_" + string(ch.Dialect))
				c.Preserves = plan.AllCaps &^ plan.TranslationLosses[c.Translate]
			default:
				continue
			}
			if missing := plan.Of(plan.CapUsageDetails) &^ c.Preserves; strict && missing != 0 {
				skips = append(skips, plan.Skip{Provider: pi, Channel: ci, Model: model, Reason: "fidelity_loss", Missing: missing})
				continue
			}
			if c.Translate != plan.TranslateNone {
				xlate = append(xlate, c)
			} else {
				cands = append(cands, c)
			}
		}
		cands = append(cands, xlate...)
	}
	return cands, skips
}

func servesRoute(ch plan.Channel, r plan.Route) bool {
	for _, cr := range ch.Routes {
		if cr == r {
			return true
		}
	}
	return false
}

// plan adds the plan over cands and skips, for route r.
func (b *builder) plan(cands []plan.Candidate, skips []plan.Skip, r plan.Route) int {
	native := true
	for _, c := range cands {
		native = native && c.Tier == plan.TierNative && b.Providers[c.Provider].Channels[c.Channel].Dialect == r.Dialect()
	}
	return b.Plan(plan.Plan{NativeOnly: native && len(cands) > 0, Listed: len(cands) > 0}, cands, skips)
}

func filterPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
