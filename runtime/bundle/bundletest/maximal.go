// Package bundletest builds decision graphs for tests of the packages that
// serialize, render, report on or load them: a small graph with every field
// set, a synthetic one of realistic size, and one shaped like the default
// policy whose plans are placed by hand.
package bundletest

import (
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
)

// checked is a stand-in for a serialized checked AST: valid base64, which
// is all that bundle loading and rendering look at.
const checked = "CgIIAQ=="

// Maximal returns a small, referentially valid graph in which every field of
// every IR type is set at least once, so a serializer that drops a field or
// a schema that misses one is caught.
func Maximal() *plan.Graph {
	g := &plan.Graph{
		SourceHash:     "sha256:" + hex64('a'),
		OnFidelityLoss: plan.LossReject,
		Providers:      []plan.Provider{openAI(), anthropic(), selfHosted()},
		Pools: []plan.Pool{{
			Name: "gpus", DNS: "vllm.internal:8000", Scheme: "https", Picker: "picker.internal:9002",
			PickerCAFile: "/etc/pistra/picker-ca.pem", PickerTimeoutMS: 2000, PickerFailure: plan.PickerFailClosed,
			Subsets: []plan.Subset{{Name: "eval", DNS: "vllm-eval.internal:8000"}},
		}, {
			Name: "sidecar", DNS: "127.0.0.1:8000", Scheme: "http", Picker: "127.0.0.1:9002",
			PickerPlaintext: true, PickerTimeoutMS: 250, PickerFailure: plan.PickerFailOpen,
		}},
		Profiles: []plan.Profile{
			{Name: "default", RequireCaps: 0, OnFidelityLoss: plan.LossReject, Table: 0},
			{
				Name: "eval", AllowedModels: []string{"gpt-4o", "claude-*"}, OnFidelityLoss: plan.LossAllow,
				RequireCaps: plan.Of(plan.CapUsageDetails, plan.CapStrictTools), PoolSubset: "eval", Table: 1,
				Rules:      []plan.Rule{{Name: "no-o1", Code: "model_blocked", Message: "o1 is off", Expr: 1}},
				Budgets:    []int{0, 1},
				MCPServers: []int{0}, Agents: []int{0}, AgentBudgets: []int{2},
			},
		},
		MCPServers: []plan.Service{{
			Name: "tools", Kind: plan.KindMCPServer, URL: "https://tools.internal/mcp", CredentialEnv: "TOOLS_TOKEN",
			Auth: plan.AuthXAPIKey, Headers: []plan.Header{{Name: "x-team", Value: "platform"}},
			TLS: &plan.TLS{CAFile: "/etc/pistra/tools-ca.pem"}, TimeoutMS: 30000,
		}},
		Agents: []plan.Service{{Name: "planner", Kind: plan.KindAgent, URL: "http://planner.internal:9000", CostPerCall: 5}},
		Keys: []plan.Key{
			{Name: "ci", Hash: "sha256:" + hex64('1'), Profile: 0},
			{Name: "evals", Hash: "sha256:" + hex64('2'), Profile: 1},
		},
		Budgets: []plan.Budget{
			{Name: "daily", Limit: 2_000_000, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostTotalToken, CostExpr: -1, CostPerCall: 1, CostPerSession: 1},
			{Name: "weighted", Limit: 500, Window: plan.WindowHour, Per: plan.PerProfile, CostType: plan.CostCEL, CostExpr: 0},
			{Name: "agent-calls", Limit: 1000, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostTotalToken, CostExpr: -1, CostPerCall: 2},
		},
		Rules: []plan.Rule{{Name: "embeddings-off", Code: "route_blocked", Expr: 2, Static: true}},
		CandidateLists: [][]plan.Candidate{
			{
				{Provider: 0, Channel: 0, Tier: plan.TierNative, Model: "gpt-4o", Preserves: plan.AllCaps, Origin: "policies/catalog.cue", Primary: true},
				{Provider: 1, Channel: 0, Tier: plan.TierTranslation, Model: "claude-sonnet-4", Translate: plan.TranslateOpenAIAnthropic,
					Preserves: plan.AllCaps &^ plan.TranslationLosses[plan.TranslateOpenAIAnthropic], Origin: "pistra translator"},
			},
			{
				{Provider: 2, Channel: 0, Tier: plan.TierNative, Model: "llama-3-70b", Preserves: plan.AllCaps, Origin: "policies/pool.cue", Primary: true, PoolSubset: "eval"},
			},
			{
				{Provider: 1, Channel: 0, Tier: plan.TierNative, Model: "claude-sonnet-4", Preserves: plan.AllCaps, Origin: "policies/catalog.cue", Primary: true},
				{Provider: 1, Channel: 1, Tier: plan.TierProviderCompat, Model: "claude-sonnet-4", Preserves: plan.Of(plan.CapExtendedThinking), Origin: "https://docs.anthropic.com/en/api/openai-sdk", Primary: true},
			},
			{},
			{
				{Provider: 0, Channel: 0, Tier: plan.TierNative, Model: "gpt-4o", Preserves: plan.AllCaps, Origin: "policies/catalog.cue", Primary: true, Denied: 1},
			},
		},
		SkipLists: [][]plan.Skip{
			{},
			{
				{Provider: 1, Channel: 1, Model: "claude-sonnet-4", Reason: "fidelity_loss", Missing: plan.Of(plan.CapStrictTools, plan.CapUsageDetails)},
				{Provider: 0, Channel: -1, Reason: "model_denied"},
				{Provider: 0, Channel: 0, Model: "gpt-4o", Reason: "fidelity_loss", Missing: plan.Of(plan.CapStrictTools), Translate: plan.TranslateAnthropicOpenAI},
			},
			{
				{Provider: 0, Channel: 0, Model: "gpt-4o", Reason: "route_blocked", Rules: 1},
			},
		},
		Plans: []plan.Plan{
			{Candidates: 0, Skips: 0, NativeOnly: false, Listed: true},
			{Candidates: 1, Skips: 0, NativeOnly: true, Listed: true},
			{Candidates: 2, Skips: 1, Listed: true},
			{Candidates: 3, Skips: 2, NativeOnly: true, Denied: 1, WithDenied: 4},
		},
		Tables: []plan.Table{
			{Entries: []plan.Entry{
				{Route: plan.RouteChatCompletions, Model: "fast", Plan: 0},
				{Route: plan.RouteChatCompletions, Model: "gpt-4o", Plan: 0},
				{Route: plan.RouteChatCompletions, Model: "llama-3-70b", Plan: 1},
				{Route: plan.RouteEmbeddings, Model: "gpt-4o", Plan: 3},
				{Route: plan.RouteMessages, Model: "claude-sonnet-4", Plan: 2},
			}, RouteSets: []plan.RouteSet{16, 1, 5, 1}},
			{Entries: []plan.Entry{
				{Route: plan.RouteChatCompletions, Model: "gpt-4o", Plan: 0},
				{Route: plan.RouteMessages, Model: "claude-sonnet-4", Plan: 2},
			}, RouteSets: []plan.RouteSet{16, 0, 1, 0}},
		},
		Names: []string{"claude-sonnet-4", "fast", "gpt-4o", "llama-3-70b"},
		CEL: []plan.Expr{
			{Kind: "cost", Source: "input_tokens + 4u * output_tokens", Checked: checked},
			{Kind: "rule", Source: `model.startsWith("o1")`, Checked: checked},
			{Kind: "rule", Source: `route == "embeddings" && profile != "default"`, Checked: checked},
		},
	}
	sealed(g)
	// A stand-in of the right shape: loading does not check signatures,
	// a Verifier does, and its tests sign with keys they generate.
	g.Signatures = []string{"eyJhbGciOiJFZERTQSJ9.e30.AAAA"}
	return g
}

// sealed records g's digest, so that the graph loads as a built bundle
// does.
func sealed(g *plan.Graph) *plan.Graph {
	if err := bundle.Seal(g); err != nil {
		panic(err)
	}
	return g
}

func openAI() plan.Provider {
	return plan.Provider{
		Name: "openai", BaseURL: "https://api.openai.com/v1", Pool: -1, CredentialEnv: "OPENAI_API_KEY", Auth: plan.AuthBearer,
		Headers: []plan.Header{{Name: "OpenAI-Beta", Value: "assistants=v2"}},
		Channels: []plan.Channel{{
			Name: "api", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
			Routes:    []plan.Route{plan.RouteChatCompletions, plan.RouteCompletions, plan.RouteEmbeddings, plan.RouteResponses},
			Preserves: plan.AllCaps, Origin: "policies/catalog.cue",
		}},
		Models:    []plan.Model{{Name: "gpt-4o", MaxTokens: 16384}, {Name: "gpt-4o-mini"}},
		Aliases:   []plan.Alias{{Name: "fast", Target: "gpt-4o"}},
		Retry:     plan.Retry{Max: 2, BackoffMS: 250, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx, plan.Failure429}},
		TimeoutMS: 30_000,
		Failover:  plan.Failover{To: []int{1}, On: []plan.FailureClass{plan.Failure5xx, plan.FailureTimeout}},
		Circuit:   &plan.Circuit{Failures: 5, CoolDownMS: 30_000, HalfOpenProbes: 2},
		UsageAPI: &plan.UsageAPI{KeyID: "key_abc123", WorkspaceID: "wrkspc_01", API: plan.UsageAPIOpenAI, AdminKeyEnv: "OPENAI_ADMIN_KEY",
			SettleDelayMS: 86_400_000, Tolerance: 0.01},
		StreamUsage: true,
	}
}

func anthropic() plan.Provider {
	return plan.Provider{
		Name: "anthropic", BaseURL: "https://api.anthropic.com", Pool: -1, CredentialEnv: "ANTHROPIC_API_KEY", Auth: plan.AuthXAPIKey,
		Headers: []plan.Header{{Name: "anthropic-version", Value: "2023-06-01"}},
		Query:   []plan.Header{{Name: "beta", Value: "true"}},
		Channels: []plan.Channel{
			{Name: "messages", Dialect: plan.DialectAnthropic, Tier: plan.TierNative, Routes: []plan.Route{plan.RouteMessages}, Preserves: plan.AllCaps, Origin: "policies/catalog.cue"},
			{
				Name: "openai-compat", Dialect: plan.DialectOpenAI, Tier: plan.TierProviderCompat, BaseURL: "https://api.anthropic.com/v1",
				CredentialEnv: "ANTHROPIC_COMPAT_KEY", Auth: plan.AuthBearer,
				Headers: []plan.Header{{Name: "Anthropic-Workspace-Id", Value: "wrkspc_01"}}, Query: []plan.Header{{Name: "compat", Value: "1"}},
				ModelGate: []string{"claude-*"}, Routes: []plan.Route{plan.RouteChatCompletions},
				Preserves: plan.Of(plan.CapExtendedThinking), Origin: "https://docs.anthropic.com/en/api/openai-sdk",
				VerifiedAt: "2025-06-01", VerifiedBy: "https://docs.anthropic.com/en/api/openai-sdk",
				Overrode: []plan.Claim{{Preserves: plan.Of(plan.CapMultiChoice), Origin: "preset:anthropic_compat", VerifiedAt: "2025-05-01", VerifiedBy: "https://docs.anthropic.com/en/api/openai-sdk"}},
			},
		},
		Models: []plan.Model{{Name: "claude-sonnet-4", MaxTokens: 8192}},
		Retry:  plan.Retry{Max: 1},
	}
}

func selfHosted() plan.Provider {
	return plan.Provider{
		Name: "vllm", Pool: 0, Auth: plan.AuthBearer,
		TLS:      &plan.TLS{CAFile: "/etc/pistra/tls/pool-ca.pem", CertFile: "/etc/pistra/tls/pistrad.pem", KeyFile: "/etc/pistra/tls/pistrad-key.pem", ServerName: "vllm.internal"},
		Channels: []plan.Channel{{Name: "openai", Dialect: plan.DialectOpenAI, Tier: plan.TierNative, Routes: []plan.Route{plan.RouteChatCompletions}, Preserves: plan.AllCaps, Origin: "policies/pool.cue"}},
		Models:   []plan.Model{{Name: "llama-3-70b"}},
	}
}

// hex64 is a 64-digit hex string of one repeated digit.
func hex64(d byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = d
	}
	return string(b)
}
