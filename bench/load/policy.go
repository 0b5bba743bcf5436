package main

import (
	"github.com/pistra/pistra/bench/internal/proc"
	"github.com/pistra/pistra/internal/testkit"
)

// benchKey is the client key the load sends through pistrad; budgetKey the
// same through a profile with a budget, so every request is held and
// settled (a limit no load reaches); leanKey the key the lean relay and
// nginx check.
const (
	benchKey  = "sk-pistra-bench"
	budgetKey = "sk-pistra-bench-budget"
	leanKey   = "sk-pistra-bench-lean"
)

// benchPolicy serves the fake at baseURL as one OpenAI provider; "fast" is
// an alias, so every request through pistrad has its model rewritten.
func benchPolicy(baseURL string) testkit.Policy {
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"fake": {
			BaseURL: baseURL, CredentialEnv: "PISTRA_BENCH_UPSTREAM_KEY",
			Models:   map[string]testkit.Model{"gpt-4o-mini": {}},
			Aliases:  map[string]string{"fast": "gpt-4o-mini"},
			Channels: map[string]testkit.Channel{"native": {Dialect: "openai", Tier: "native"}},
			Timeout:  "30s",
		}},
		Profiles: map[string]testkit.Profile{"default": {}, "budgeted": {Budgets: []string{"bench-day"}}},
		Budgets: []testkit.Budget{{Name: "bench-day", Limit: 1000000000000000, Window: "day", Per: "key",
			Cost: testkit.Cost{Type: "TotalToken"}}},
		Keys: []testkit.Key{
			{Name: "bench", Profile: "default", Secret: benchKey},
			{Name: "bench-budget", Profile: "budgeted", Secret: budgetKey},
		},
	}
}

// writeBundle compiles the benchmark policy for an upstream at baseURL and
// writes bundle.json into dir.
func writeBundle(dir, baseURL string) (string, error) {
	return proc.WriteBundle(dir, string(benchPolicy(baseURL).Source()))
}
