package main

import (
	"crypto/sha256"
	"fmt"

	"github.com/pistra/pistra/bench/internal/proc"
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

// benchPolicy serves the fake as one OpenAI provider; "fast" is an alias,
// so every request through pistrad has its model rewritten.
const benchPolicy = `package pistra

providers: fake: {
	base_url:       %q
	credential_env: "PISTRA_BENCH_UPSTREAM_KEY"
	models: "gpt-4o-mini": {}
	aliases: fast: "gpt-4o-mini"
	channels: native: {dialect: "openai", tier: "native"}
	timeout: "30s"
}

profiles: default: {}
profiles: budgeted: budgets: ["bench-day"]

budgets: [{name: "bench-day", limit: 1000000000000000, window: "day", per: "key", cost: type: "TotalToken"}]

keys: [
	{name: "bench", profile: "default", hash: "sha256:%x"},
	{name: "bench-budget", profile: "budgeted", hash: "sha256:%x"},
]
`

// writeBundle compiles the benchmark policy for an upstream at baseURL and
// writes bundle.json into dir.
func writeBundle(dir, baseURL string) (string, error) {
	return proc.WriteBundle(dir, fmt.Sprintf(benchPolicy, baseURL, sha256Sum(benchKey), sha256Sum(budgetKey)))
}

func sha256Sum(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }
