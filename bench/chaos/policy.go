package main

import (
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
	"github.com/pistra/pistra/internal/testkit"
)

// clientKey is the key every chaos request presents; its profile holds a
// budget, so each request is held and settled and a hold that leaks shows.
const clientKey = "sk-pistra-chaos"

// upstreamKeys are what each fake requires and pistrad is given, by the
// environment variable the policy names.
var upstreamKeys = map[string]string{
	"CHAOS_OA_A_KEY": "sk-chaos-openai-a",
	"CHAOS_OA_B_KEY": "sk-chaos-openai-b",
	"CHAOS_AN_A_KEY": "sk-chaos-anthropic-a",
	"CHAOS_AN_B_KEY": "sk-chaos-anthropic-b",
}

// chaosPolicy: two public names, each with a primary of its dialect and a
// failover chain that ends in a translated candidate. "chat" is OpenAI's:
// oa-a, then oa-dead (a closed port), oa-b (the fake killed mid-run), then
// an-b, Anthropic-native. "claude" is Anthropic's: an-a, an-b (also killed),
// then oa-b. Either dialect's clients ask for either name, so every request
// meets native and translated candidates in some order. The credentials go
// as each API wants them: Bearer to OpenAI, x-api-key to Anthropic.
func chaosPolicy(u upstreams, timeout time.Duration) testkit.Policy {
	on := []string{"connect", "5xx", "429", "timeout"}
	retries := &testkit.Retries{Max: 1, Backoff: "20ms", On: on}
	aliasesOf := func(model string, names []string) map[string]string {
		out := map[string]string{}
		for _, n := range names {
			out[n] = model
		}
		return out
	}
	openai := func(url, env string, aliases ...string) testkit.Provider {
		return testkit.Provider{BaseURL: url, CredentialEnv: env, Auth: "bearer",
			Models: map[string]testkit.Model{"gpt-4o-mini": {}}, Aliases: aliasesOf("gpt-4o-mini", aliases),
			Channels: map[string]testkit.Channel{"native": {Dialect: "openai", Tier: "native"}},
			Retries:  retries, Timeout: timeout.String()}
	}
	anthropic := func(url, env string, aliases ...string) testkit.Provider {
		return testkit.Provider{BaseURL: url, CredentialEnv: env, Auth: "x-api-key",
			Headers: map[string]string{"anthropic-version": "2023-06-01"},
			Models:  map[string]testkit.Model{"claude-haiku-4-5": {MaxTokens: 1024}}, Aliases: aliasesOf("claude-haiku-4-5", aliases),
			Channels: map[string]testkit.Channel{"native": {Dialect: "anthropic", Tier: "native"}},
			Retries:  retries, Timeout: timeout.String()}
	}
	oaA := openai(u.oaA, "CHAOS_OA_A_KEY", "chat")
	oaA.Failover = &testkit.Failover{To: []string{"oa-dead", "oa-b", "an-b"}, On: on}
	anA := anthropic(u.anA, "CHAOS_AN_A_KEY", "claude")
	anA.Failover = &testkit.Failover{To: []string{"an-b", "oa-b"}, On: on}
	return testkit.Policy{
		Providers: map[string]testkit.Provider{
			"oa-a":    oaA,
			"oa-dead": openai(u.dead, "CHAOS_OA_A_KEY", "chat"),
			"oa-b":    openai(u.oaB, "CHAOS_OA_B_KEY", "chat", "claude"),
			"an-a":    anA,
			"an-b":    anthropic(u.anB, "CHAOS_AN_B_KEY", "claude", "chat"),
		},
		Primary:  map[string]string{"chat": "oa-a", "claude": "an-a", "gpt-4o-mini": "oa-a", "claude-haiku-4-5": "an-a"},
		Profiles: map[string]testkit.Profile{"chaos": {Budgets: []string{"chaos-day"}}},
		Budgets: []testkit.Budget{{Name: "chaos-day", Limit: 1000000000000000, Window: "day", Per: "key",
			Cost: testkit.Cost{Type: "TotalToken"}}},
		Keys: []testkit.Key{{Name: "chaos", Profile: "chaos", Secret: clientKey}},
	}
}

// upstreams are the base URLs the policy points at.
type upstreams struct {
	oaA, oaB, anA, anB, dead string
}

// writePolicy compiles the chaos policy into dir/bundle.json.
func writePolicy(dir string, u upstreams, timeout time.Duration) (string, error) {
	return proc.WriteBundle(dir, string(chaosPolicy(u, timeout).Source()))
}
