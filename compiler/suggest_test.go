package compiler

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestClosest(t *testing.T) {
	cases := []struct {
		got   string
		known []string
		want  string // "" for no suggestion
	}{
		{"natve", []string{"native", "provider_compat"}, "native"},
		{"anthorpic", []string{"anthropic", "openai"}, "anthropic"}, // a swap is one edit
		{"OpenAI", []string{"anthropic", "openai"}, "openai"},
		{"retry", []string{"retries", "timeout"}, "retries"},
		{"dayly", []string{"day", "hour", "minute", "month"}, "day"},
		{"daily", []string{"day", "hour", "minute", "month"}, "day"},
		{"Hourly", []string{"day", "hour", "minute", "month"}, "hour"},
		{"24h", []string{"day", "hour", "minute", "month"}, "day"},
		{"daily", []string{"openai"}, ""}, // a synonym only of a word accepted here
		{"keys", []string{"key", "profile"}, "key"},
		{"allowed_model", []string{"allowed_models", "budgets"}, "allowed_models"},
		// Other digits are another thing, not a typo.
		{"4xx", []string{"429", "5xx", "connect", "timeout"}, ""},
		{"gpt-5", []string{"gpt-4o", "gpt-4o-mini"}, ""},
		{"claude-sonnet-4-0", []string{"claude-sonnet-4-5"}, ""},
		// Too far from anything.
		{"weight", []string{"base_url", "dialect", "models", "routes", "tier"}, ""},
		{"profiles", []string{"pro", "fast"}, ""},
		{"", []string{"a"}, ""},
	}
	for _, c := range cases {
		got, ok := closest(c.got, c.known)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("closest(%q, %v) = %q, want %q", c.got, c.known, got, c.want)
		}
	}
}

func TestLooksSecret(t *testing.T) {
	cases := []struct {
		name, value string
		secret      bool
	}{
		{"key", "anything", true},
		{"x-goog-api-key", "x", true},
		{"access_token", "x", true},
		{"X-Client-Secret", "x", true},
		{"X-Forwarded", "Bearer abc", true},
		{"X-Forwarded", "basic dXNlcjpwYXNz", true},
		{"X-Upstream", "sk-ant-api03-abcdefghijklmnopqrstu", true},
		{"X-Upstream", "AIzaSyD3kq8lZ0rT5bX9vNwQ2mYc7Hf1uJp4sEo", true},
		{"X-Upstream", "gsk_0123456789abcdefghij", true},
		{"X-Upstream", "q8Zr4Lm2Xv9Tn6Bk1Wc7Hs3Jp0Yf5Dg8Ea2Uo4Ri", true},
		{"X-Upstream", strings.Repeat("0123456789abcdef", 4), true}, // a hex secret
		// Not secrets.
		{"anthropic-version", "2023-06-01", false},
		{"anthropic-beta", "prompt-caching-2024-07-31,token-efficient-tools-2025-02-19", false},
		{"OpenAI-Organization", "org-4fQ9xT2mLr8vNc3bW7zK1hYd", false},
		{"api-version", "2024-10-21", false},
		{"X-Upstream", "sk-1", false},
		{"X-Trace", "00000000000000000000000000000000000000000000", false},
		{"X-Request-Id", "3f2b8c1e-9a4d-4b7e-8f6a-1c2d3e4f5a6b", false},
		{"keyboard", "x", false},
		// A credential word inside the name names something else; a
		// qualified "key" is a lookup key.
		{"x-cache-key-prefix", "team-a", false},
		{"X-Api-Key-Id", "kid-1", false},
		{"Idempotency-Key", "batch-2026-11", false},
		{"prompt_cache_key", "team-a", false},
		// Trace and request ids are random by design...
		{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"X-Request-Id", "q8Zr4Lm2Xv9Tn6Bk1Wc7Hs3Jp0Yf5Dg8Ea2Uo4Ri", false},
		// ...but a key or a scheme in one is still a secret.
		{"traceparent", "Bearer abc", true},
		{"x-request-id", "sk-proj-4fQ9xT2mLr8vNc3bW7zK1hYd6pJs0aE5", true},
		// A key after other words.
		{"X-Upstream", "token sk-proj-4fQ9xT2mLr8vNc3bW7zK1hYd6pJs0aE5", true},
	}
	for _, c := range cases {
		why, secret := looksSecret(c.name, c.value)
		if secret != c.secret {
			t.Errorf("looksSecret(%q, %q) = %v (%s), want %v", c.name, c.value, secret, why, c.secret)
		}
		if secret && strings.Contains(why, c.value) {
			t.Errorf("looksSecret(%q, ...) repeats the value: %s", c.name, why)
		}
	}
}

// TestSecretInText: the free text shown to clients (verified_by, origin,
// a rule's message) is read by its words, wherever the key sits in it.
func TestSecretInText(t *testing.T) {
	cases := []struct {
		text   string
		secret bool
	}{
		{"probe https://generativelanguage.googleapis.com/v1beta/models?key=AIzaSyD3kq8lZ0rT5bX9vNwQ2mYc7Hf1uJp4sEo", true},
		{"curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdef' /v1/models", true},
		{"probe 2026-11-20 with x-api-key 7f3c2b9a1d4e5f60718293a4b5c6d7e8", true},
		{"ask ops; token sk-ant-api03-abcdefghijklmnopqrstu", true},
		// Not secrets.
		{"https://docs.anthropic.com/en/api/openai-sdk", false},
		{"probe with bearer auth, 2026-11-20", false},
		{"https://github.com/openai/openai-go/blob/3f9a2b7c1d4e5f60718293a4b5c6d7e8f9a0b1c2/README.md", false},
		{"models are denied in finance; ask #platform for access", false},
	}
	for _, c := range cases {
		why, secret := secretIn(c.text, true)
		if secret != c.secret {
			t.Errorf("secretIn(%q) = %v (%s), want %v", c.text, secret, why, c.secret)
		}
	}
}

// TestFutureClaimSlack: a claim dated tomorrow (UTC) may be today where
// the operator is; the day after is not.
func TestFutureClaimSlack(t *testing.T) {
	today := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return today }
	for days, warned := range map[int]bool{0: false, 1: false, 2: true} {
		date := today.AddDate(0, 0, days).Format(isoDate)
		dir := writePolicy(t, map[string]string{"p.cue": fmt.Sprintf(`providers: a: {
	base_url: "https://api.anthropic.com/v1"
	models: m: {}
	channels: {
		native: {dialect: "anthropic", tier: "native"}
		compat: {dialect: "openai", tier: "provider_compat", preserves: [], verified_at: %q, verified_by: "https://example.com"}
	}
}
profiles: p: {}
keys: []
`, date)})
		_, warns, err := CompileWithWarnings(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(warns) == 1 && strings.Contains(warns[0].Msg, "in the future"); got != warned || len(warns) > 1 {
			t.Errorf("verified_at %s (today %s): warnings %v, want warned=%v", date, today.Format(isoDate), warns, warned)
		}
	}
}
