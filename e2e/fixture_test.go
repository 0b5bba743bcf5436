package e2e

import "github.com/pistra/pistra/internal/testkit"

// A test's policy is a fixture: Go values built from the provider blocks
// below, pointed at the URLs of the gateway's fakes once they listen.
// Everything a test decides at run time (a limit, a wrapped fake's URL, a
// cool-down) is a Go value the fixture closes over, so there are no
// placeholders to fill.

// fixture builds a test's policy for the fakes at p's URLs.
type fixture func(p policy) testkit.Policy

// The environment variables the fakes' secrets are read from
// (upstreamEnv).
const (
	envOpenAI    = "E2E_OPENAI_KEY"
	envBackup    = "E2E_BACKUP_KEY"
	envAnthropic = "E2E_ANTHROPIC_KEY"
)

// openAIProvider is the OpenAI provider the tests share: the fake at url,
// whose secret is in env, serving models on one native channel with a 5s
// timeout.
func openAIProvider(url, env string, models ...string) testkit.Provider {
	return testkit.Provider{BaseURL: url, CredentialEnv: env, Models: modelsOf(0, models...),
		Channels: nativeChannel("openai"), Timeout: "5s"}
}

// anthropicProvider is the Anthropic provider the tests share: the
// Anthropic fake's secret, anthropic-version 2023-06-01, models with
// maxTokens as their default max_tokens, one native channel, a 5s timeout.
func anthropicProvider(url string, maxTokens int64, models ...string) testkit.Provider {
	return testkit.Provider{BaseURL: url, CredentialEnv: envAnthropic,
		Headers: map[string]string{"anthropic-version": "2023-06-01"},
		Models:  modelsOf(maxTokens, models...), Channels: nativeChannel("anthropic"), Timeout: "5s"}
}

// nativeChannel is a provider's one channel, native, on routes (every
// route of its dialect when none are named).
func nativeChannel(dialect string, routes ...string) map[string]testkit.Channel {
	return map[string]testkit.Channel{"native": {Dialect: dialect, Tier: "native", Routes: routes}}
}

func modelsOf(maxTokens int64, names ...string) map[string]testkit.Model {
	out := map[string]testkit.Model{}
	for _, n := range names {
		out[n] = testkit.Model{MaxTokens: maxTokens}
	}
	return out
}

// retries retries max times, 10ms apart, on the failure classes named.
func retries(max int, on ...string) *testkit.Retries {
	return &testkit.Retries{Max: max, Backoff: "10ms", On: on}
}

// failover sends a provider's traffic to the providers named, on the
// failure classes named.
func failover(to []string, on ...string) *testkit.Failover {
	return &testkit.Failover{To: to, On: on}
}

// clientKey is a key of profile presenting secret.
func clientKey(name, profile, secret string) testkit.Key {
	return testkit.Key{Name: name, Profile: profile, Secret: secret}
}

// dayBudget is a TotalToken budget of limit per day, a bucket per key.
func dayBudget(name string, limit uint64) testkit.Budget {
	return testkit.Budget{Name: name, Limit: limit, Window: "day", Cost: testkit.Cost{Type: "TotalToken"}}
}

// defaultPolicy is the catalog and policy most tests serve. up-openai
// fails over to backup-openai, which resolves the aliases its own way;
// dead points at a closed port.
func defaultPolicy(p policy) testkit.Policy {
	upOpenAI := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini", "text-embedding-3-small", "gpt-3.5-turbo-instruct")
	upOpenAI.Aliases = map[string]string{"fast": "gpt-4o-mini"}
	upOpenAI.Retries = retries(1, "connect", "5xx", "429")
	upOpenAI.Timeout = "2s"
	upOpenAI.Failover = failover([]string{"backup-openai"}, "connect", "5xx", "429", "timeout")

	backup := openAIProvider(p.Backup, envBackup, "gpt-4o-mini", "backup-mini")
	backup.Aliases = map[string]string{"fast": "backup-mini", "flaky": "backup-mini"}
	backup.Channels = nativeChannel("openai", "chat_completions", "responses")

	dead := openAIProvider(p.Dead, "", "dead-model")
	dead.Aliases = map[string]string{"flaky": "dead-model"}
	dead.Channels = nativeChannel("openai", "chat_completions")
	dead.Retries = retries(1, "connect")
	dead.Failover = failover([]string{"backup-openai"}, "connect")

	upAnthropic := anthropicProvider(p.Anthropic, 8192, "claude-haiku-4-5", "claude-sonnet-4-5")
	upAnthropic.Aliases = map[string]string{"smart": "claude-sonnet-4-5"}
	upAnthropic.Retries = retries(2, "5xx", "429")

	return testkit.Policy{
		Providers: map[string]testkit.Provider{"up-openai": upOpenAI, "backup-openai": backup, "dead": dead, "up-anthropic": upAnthropic},
		Primary:   map[string]string{"fast": "up-openai", "gpt-4o-mini": "up-openai", "flaky": "dead"},
		Profiles: map[string]testkit.Profile{
			"default": {},
			"limited": {AllowedModels: []string{"gpt-4o-mini", "claude-haiku-4-5"}},
			"metered": {RequireCaps: []string{"usage_details"}},
		},
		Keys: []testkit.Key{
			clientKey("default", "default", keyDefault),
			clientKey("limited", "limited", keyLimited),
			clientKey("metered", "metered", keyMetered),
		},
	}
}
