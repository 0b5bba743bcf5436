package bundletest

import (
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// CompatDocs is the page DefaultPolicy's OpenAI-compatible Anthropic
// channel cites for its capability claim.
const CompatDocs = "https://platform.claude.com/docs/en/cli-sdks-libraries/libraries/openai-sdk"

// DefaultPolicy returns a hand-built graph shaped like the default policy:
// an OpenAI-native provider failing over to an Anthropic provider that also
// hosts an OpenAI-compatible channel. Its plans are few and placed by hand,
// so reports on it can be asserted line by line. Each call builds a fresh
// one, so a test may edit what it gets.
func DefaultPolicy() *plan.Graph {
	xlate := plan.AllCaps &^ plan.TranslationLosses[plan.TranslateOpenAIAnthropic]
	compat := plan.Of(plan.CapExtendedThinking)
	usage := plan.Of(plan.CapUsageDetails)
	b := testkit.NewGraph("sha256:test")
	anthropic := b.Provider(plan.Provider{
		Name: "fake-anthropic", BaseURL: "http://127.0.0.1:9902/v1", Pool: -1,
		CredentialEnv: "PISTRA_FAKE_ANTHROPIC_KEY",
		Channels: []plan.Channel{
			{Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative,
				Routes: []plan.Route{plan.RouteMessages}, Preserves: plan.AllCaps, Origin: "catalog.cue"},
			{Name: "openai-compat", Dialect: plan.DialectOpenAI, Tier: plan.TierProviderCompat,
				Routes: []plan.Route{plan.RouteChatCompletions}, Preserves: compat, Origin: "catalog.cue",
				VerifiedAt: "2026-11-20", VerifiedBy: CompatDocs},
		},
		Models:  []plan.Model{{Name: "claude-haiku-4-5", MaxTokens: 8192}, {Name: "claude-sonnet-4-5", MaxTokens: 8192}},
		Aliases: []plan.Alias{{Name: "fast", Target: "claude-haiku-4-5"}, {Name: "smart", Target: "claude-sonnet-4-5"}},
		Retry:   plan.Retry{Max: 1, BackoffMS: 100, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx, plan.Failure429}}, TimeoutMS: 120000,
	})
	openai := b.Provider(plan.Provider{
		Name: "fake-openai", BaseURL: "http://127.0.0.1:9901/v1", Pool: -1,
		CredentialEnv: "PISTRA_FAKE_OPENAI_KEY",
		Channels: []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
			Routes: []plan.Route{plan.RouteChatCompletions, plan.RouteEmbeddings}, Preserves: plan.AllCaps, Origin: "catalog.cue"}},
		Models:  []plan.Model{{Name: "gpt-4o"}, {Name: "gpt-4o-mini"}},
		Aliases: []plan.Alias{{Name: "fast", Target: "gpt-4o-mini"}},
		Retry:   plan.Retry{Max: 2, BackoffMS: 100, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx, plan.Failure429}}, TimeoutMS: 60000,
		Failover: plan.Failover{To: []int{anthropic}, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx, plan.Failure429}},
	})

	nativeOpenAI := func(model string, primary bool) plan.Candidate {
		return plan.Candidate{Provider: openai, Channel: 0, Tier: plan.TierNative, Model: model,
			Preserves: plan.AllCaps, Origin: "catalog.cue", Primary: primary}
	}
	compatAnthropic := func(model string, primary bool) plan.Candidate {
		return plan.Candidate{Provider: anthropic, Channel: 1, Tier: plan.TierProviderCompat, Model: model,
			Preserves: compat, Origin: "catalog.cue", Primary: primary}
	}
	translated := func(model string, primary bool) plan.Candidate {
		return plan.Candidate{Provider: anthropic, Channel: 0, Tier: plan.TierTranslation, Model: model,
			Translate: plan.TranslateOpenAIAnthropic, Preserves: xlate,
			Origin: "catalog.cue", Primary: primary}
	}
	// lossy is what the metered profile, requiring usage details, skips of
	// the Anthropic provider's model.
	lossy := func(model string) []plan.Skip {
		return []plan.Skip{
			{Provider: anthropic, Channel: 1, Model: model, Reason: "fidelity_loss", Missing: usage},
			{Provider: anthropic, Channel: 0, Model: model, Reason: "fidelity_loss", Missing: usage},
		}
	}
	listed, native := plan.Plan{Listed: true}, plan.Plan{NativeOnly: true, Listed: true}
	fast := b.Plan(listed, []plan.Candidate{nativeOpenAI("gpt-4o-mini", true), compatAnthropic("claude-haiku-4-5", false),
		translated("claude-haiku-4-5", false)}, nil)
	smart := b.Plan(listed, []plan.Candidate{compatAnthropic("claude-sonnet-4-5", true), translated("claude-sonnet-4-5", true)}, nil)
	meteredFast := b.Plan(native, []plan.Candidate{nativeOpenAI("gpt-4o-mini", true)}, lossy("claude-haiku-4-5"))
	meteredSmart := b.Plan(plan.Plan{}, nil, lossy("claude-sonnet-4-5"))
	haiku := b.Plan(native, []plan.Candidate{{Provider: anthropic, Channel: 0, Tier: plan.TierNative, Model: "claude-haiku-4-5",
		Preserves: plan.AllCaps, Origin: "catalog.cue", Primary: true}}, nil)
	gpt4o := b.Plan(native, []plan.Candidate{nativeOpenAI("gpt-4o", true)}, nil)

	all := b.Table(
		plan.Entry{Route: plan.RouteChatCompletions, Model: "fast", Plan: fast},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "smart", Plan: smart},
		plan.Entry{Route: plan.RouteMessages, Model: "claude-haiku-4-5", Plan: haiku},
	)
	metered := b.Table(
		plan.Entry{Route: plan.RouteChatCompletions, Model: "fast", Plan: meteredFast},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "smart", Plan: meteredSmart},
	)
	narrow := b.Table(plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt-4o", Plan: gpt4o})

	b.Budgets = []plan.Budget{{Name: "team-daily", Limit: 2000000, Window: "day", Per: "key",
		CostType: "TotalToken", CostExpr: -1, CostPerCall: 1, CostPerSession: 1}}
	b.Key("dev", "sk-pistra-dev", b.Profile(plan.Profile{Name: "default", OnFidelityLoss: "reject", Table: all}))
	b.Profile(plan.Profile{Name: "lenient", OnFidelityLoss: "allow", Table: all})
	meter := b.Profile(plan.Profile{Name: "metered", RequireCaps: usage, OnFidelityLoss: "reject", Table: metered, Budgets: []int{0}})
	b.Profile(plan.Profile{Name: "narrow", AllowedModels: []string{"gpt-4o"}, OnFidelityLoss: "reject", Table: narrow})
	// No secret hashes to all zeros: the metered key is for reports, not requests.
	b.Keys = append(b.Keys, plan.Key{Name: "meter", Hash: "sha256:" + hex64('0'), Profile: meter})
	return b.Build()
}
