package main

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
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
const chaosPolicy = `package pistra

_retry: {max: 1, backoff: "20ms", on: ["connect", "5xx", "429", "timeout"]}
_on: ["connect", "5xx", "429", "timeout"]

providers: {
	"oa-a": {
		base_url:       %[1]q
		credential_env: "CHAOS_OA_A_KEY"
		auth:           "bearer"
		models: "gpt-4o-mini": {}
		aliases: chat: "gpt-4o-mini"
		channels: native: {dialect: "openai", tier: "native"}
		retries: _retry
		timeout: %[6]q
		failover: {to: ["oa-dead", "oa-b", "an-b"], on: _on}
	}
	"oa-dead": {
		base_url: %[5]q
		credential_env: "CHAOS_OA_A_KEY"
		auth:           "bearer"
		models: "gpt-4o-mini": {}
		aliases: chat: "gpt-4o-mini"
		channels: native: {dialect: "openai", tier: "native"}
		retries: _retry
		timeout: %[6]q
	}
	"oa-b": {
		base_url:       %[2]q
		credential_env: "CHAOS_OA_B_KEY"
		auth:           "bearer"
		models: "gpt-4o-mini": {}
		aliases: {chat: "gpt-4o-mini", claude: "gpt-4o-mini"}
		channels: native: {dialect: "openai", tier: "native"}
		retries: _retry
		timeout: %[6]q
	}
	"an-a": {
		base_url:       %[3]q
		credential_env: "CHAOS_AN_A_KEY"
		auth:           "x-api-key"
		headers: "anthropic-version": "2023-06-01"
		models: "claude-haiku-4-5": {max_tokens: 1024}
		aliases: claude: "claude-haiku-4-5"
		channels: native: {dialect: "anthropic", tier: "native"}
		retries: _retry
		timeout: %[6]q
		failover: {to: ["an-b", "oa-b"], on: _on}
	}
	"an-b": {
		base_url:       %[4]q
		credential_env: "CHAOS_AN_B_KEY"
		auth:           "x-api-key"
		headers: "anthropic-version": "2023-06-01"
		models: "claude-haiku-4-5": {max_tokens: 1024}
		aliases: {claude: "claude-haiku-4-5", chat: "claude-haiku-4-5"}
		channels: native: {dialect: "anthropic", tier: "native"}
		retries: _retry
		timeout: %[6]q
	}
}

primary: {chat: "oa-a", claude: "an-a", "gpt-4o-mini": "oa-a", "claude-haiku-4-5": "an-a"}

profiles: chaos: budgets: ["chaos-day"]

budgets: [{name: "chaos-day", limit: 1000000000000000, window: "day", per: "key", cost: type: "TotalToken"}]

keys: [{name: "chaos", profile: "chaos", hash: "sha256:%[7]x"}]
`

// upstreams are the base URLs the policy points at.
type upstreams struct {
	oaA, oaB, anA, anB, dead string
}

// writePolicy compiles the chaos policy into dir/bundle.json.
func writePolicy(dir string, u upstreams, timeout time.Duration) (string, error) {
	src := fmt.Sprintf(chaosPolicy, u.oaA, u.oaB, u.anA, u.anB, u.dead, timeout.String(), sha256.Sum256([]byte(clientKey)))
	return proc.WriteBundle(dir, src)
}
