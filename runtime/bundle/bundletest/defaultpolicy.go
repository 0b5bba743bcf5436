package bundletest

import "github.com/pistra/pistra/runtime/plan"

// CompatDocs is the page DefaultPolicy's OpenAI-compatible Anthropic
// channel cites for its capability claim.
const CompatDocs = "https://platform.claude.com/docs/en/cli-sdks-libraries/libraries/openai-sdk"

// DefaultPolicy returns a hand-built graph shaped like the default policy:
// an OpenAI-native provider failing over to an Anthropic provider that also
// hosts an OpenAI-compatible channel. Its plans are few and placed by hand,
// so reports on it can be asserted line by line. Each call builds a fresh
// one, so a test may edit what it gets.
func DefaultPolicy() *plan.Graph {
	const (
		anthropic = 0
		openai    = 1
	)
	xlate := plan.AllCaps &^ plan.TranslationLosses[plan.TranslateOpenAIAnthropic]
	compat := plan.Of(plan.CapExtendedThinking)
	usage := plan.Of(plan.CapUsageDetails)
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
	return &plan.Graph{
		SourceHash:     "sha256:test",
		OnFidelityLoss: "reject",
		Providers: []plan.Provider{
			{
				Name: "fake-anthropic", BaseURL: "http://127.0.0.1:9902/v1", Pool: -1, Auth: "x-api-key",
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
			},
			{
				Name: "fake-openai", BaseURL: "http://127.0.0.1:9901/v1", Pool: -1, Auth: "bearer",
				CredentialEnv: "PISTRA_FAKE_OPENAI_KEY",
				Channels: []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
					Routes: []plan.Route{plan.RouteChatCompletions, plan.RouteEmbeddings}, Preserves: plan.AllCaps, Origin: "catalog.cue"}},
				Models:  []plan.Model{{Name: "gpt-4o"}, {Name: "gpt-4o-mini"}},
				Aliases: []plan.Alias{{Name: "fast", Target: "gpt-4o-mini"}},
				Retry:   plan.Retry{Max: 2, BackoffMS: 100, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx, plan.Failure429}}, TimeoutMS: 60000,
				Failover: plan.Failover{To: []int{anthropic}, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx, plan.Failure429}},
			},
		},
		Profiles: []plan.Profile{
			{Name: "default", OnFidelityLoss: "reject", Table: 0},
			{Name: "lenient", OnFidelityLoss: "allow", Table: 0},
			{Name: "metered", RequireCaps: usage, OnFidelityLoss: "reject", Table: 1, Budgets: []int{0}},
			{Name: "narrow", AllowedModels: []string{"gpt-4o"}, OnFidelityLoss: "reject", Table: 2},
		},
		Keys: []plan.Key{
			{Name: "dev", Hash: "sha256:34e893ad1ce70d0dafdcd7131bd963816cb1a1fb43662d6774046cc3c61eec23", Profile: 0},
			{Name: "meter", Hash: "sha256:0000000000000000000000000000000000000000000000000000000000000000", Profile: 2},
		},
		Budgets: []plan.Budget{{Name: "team-daily", Limit: 2000000, Window: "day", Per: "key",
			CostType: "TotalToken", CostExpr: -1, CostPerCall: 1, CostPerSession: 1}},
		CandidateLists: [][]plan.Candidate{
			{nativeOpenAI("gpt-4o-mini", true), compatAnthropic("claude-haiku-4-5", false), translated("claude-haiku-4-5", false)},
			{compatAnthropic("claude-sonnet-4-5", true), translated("claude-sonnet-4-5", true)},
			{nativeOpenAI("gpt-4o-mini", true)},
			{},
			{{Provider: anthropic, Channel: 0, Tier: plan.TierNative, Model: "claude-haiku-4-5",
				Preserves: plan.AllCaps, Origin: "catalog.cue", Primary: true}},
			{nativeOpenAI("gpt-4o", true)},
		},
		SkipLists: [][]plan.Skip{
			{},
			{
				{Provider: anthropic, Channel: 1, Model: "claude-haiku-4-5", Reason: "fidelity_loss", Missing: usage},
				{Provider: anthropic, Channel: 0, Model: "claude-haiku-4-5", Reason: "fidelity_loss", Missing: usage},
			},
			{
				{Provider: anthropic, Channel: 1, Model: "claude-sonnet-4-5", Reason: "fidelity_loss", Missing: usage},
				{Provider: anthropic, Channel: 0, Model: "claude-sonnet-4-5", Reason: "fidelity_loss", Missing: usage},
			},
		},
		Plans: []plan.Plan{
			{Candidates: 0, Skips: 0, Listed: true},
			{Candidates: 1, Skips: 0, Listed: true},
			{Candidates: 2, Skips: 1, NativeOnly: true, Listed: true},
			{Candidates: 3, Skips: 2},
			{Candidates: 4, Skips: 0, NativeOnly: true, Listed: true},
			{Candidates: 5, Skips: 0, NativeOnly: true, Listed: true},
		},
		Tables: []plan.Table{
			{Entries: []plan.Entry{
				{Route: plan.RouteChatCompletions, Model: "fast", Plan: 0},
				{Route: plan.RouteChatCompletions, Model: "smart", Plan: 1},
				{Route: plan.RouteMessages, Model: "claude-haiku-4-5", Plan: 4},
			}},
			{Entries: []plan.Entry{
				{Route: plan.RouteChatCompletions, Model: "fast", Plan: 2},
				{Route: plan.RouteChatCompletions, Model: "smart", Plan: 3},
			}},
			{Entries: []plan.Entry{{Route: plan.RouteChatCompletions, Model: "gpt-4o", Plan: 5}}},
		},
		Names: []string{"claude-haiku-4-5", "claude-sonnet-4-5", "fast", "gpt-4o", "gpt-4o-mini", "smart"},
	}
}
