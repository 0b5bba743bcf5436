package compiler

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestShapeErrors covers how CUE-level problems are worded: one line per
// problem, in the operator's file, never a disjunction dump.
func TestShapeErrors(t *testing.T) {
	cases := []struct {
		name, policy string
		want         []string // each "line:col: path: message", in order
	}{
		{"struct where a string belongs", `providers: openai: "https://api.openai.com/v1"`,
			[]string{`1:20: providers.openai: expected struct, got string "https://api.openai.com/v1"`}},
		{"list where a struct list belongs", `keys: {}`,
			[]string{`1:1: keys: expected list, got struct`}},
		{"a type instead of a value", `keys: [{name: string, profile: "p", hash: "h"}]`,
			[]string{`1:15: keys[0].name: expected a concrete string, got string`}},
		{"default with a wrong type", `providers: p: {base_url: "https://x.test", models: m: {}, channels: c: {dialect: "openai", tier: "native"}, stream_usage: 1}`,
			[]string{`1:123: providers.p.stream_usage: expected bool, got int 1`}},
		{"bound inside a default", `providers: p: {base_url: "https://x.test", models: m: {}, channels: c: {dialect: "openai", tier: "native"}, retries: max: 11}`,
			[]string{`1:123: providers.p.retries.max: must be <=10, got 11`}},
		{"unknown top-level field", `provider: {}`,
			[]string{`1:1: provider: unknown field "provider" (known: access_rules, agents, budgets, claim_max_age_days, keys, mcp_servers, on_fidelity_loss, overlays, pools, primary, profiles, providers); did you mean "providers"?`}},
		{"misspelt required field", `keys: [{name: "a", profil: "p", hash: "h"}]`,
			[]string{`1:20: keys[0].profil: unknown field "profil" (known: hash, name, profile); did you mean "profile"?`}},
		{"unknown field in a list element", `keys: [{name: "a", profile: "p", hash: "h", scope: "x"}]`,
			[]string{`1:45: keys[0].scope: unknown field "scope" (known: hash, name, profile)`}},
		{"values through a helper", `_t: 30
providers: p: {base_url: "https://x.test", models: m: {}, channels: c: {dialect: "openai", tier: "native"}, timeout: _t}`,
			[]string{`providers.p.timeout: expected string, got int 30`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writePolicy(t, map[string]string{"p.cue": c.policy + "\nprofiles: {}\n"})
			_, err := Compile(dir)
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want policy errors, got %v", err)
			}
			if len(errs) != len(c.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(c.want), err)
			}
			prefix := filepath.Join(dir, "p.cue") + ":"
			for i, e := range errs {
				got := strings.TrimPrefix(e.Error(), prefix)
				if !strings.HasSuffix(got, c.want[i]) {
					t.Errorf("got  %s\nwant %s", got, c.want[i])
				}
			}
		})
	}
}
