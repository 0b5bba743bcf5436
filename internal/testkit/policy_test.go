package testkit

import (
	"strings"
	"testing"
)

// TestPolicySource: keys are written hashed, never as their secret; a
// channel declaring it keeps nothing says so, one declaring nothing says
// nothing; members a policy leaves empty are not written.
func TestPolicySource(t *testing.T) {
	p := Policy{
		Providers: map[string]Provider{"p": {BaseURL: "http://127.0.0.1:1/v1", Models: map[string]Model{"m": {}},
			Channels: map[string]Channel{
				"native": {Dialect: "openai", Tier: "native"},
				"compat": {Dialect: "openai", Tier: "provider_compat", Preserves: Keeps()},
			}}},
		Profiles: map[string]Profile{"default": {}},
		Keys:     []Key{{Name: "k", Profile: "default", Secret: "sk-secret"}},
	}
	src := string(p.Source())
	for _, want := range []string{"package pistra\n", `"hash": "` + HashKey("sk-secret") + `"`, `"preserves": []`, `"default": {}`} {
		if !strings.Contains(src, want) {
			t.Errorf("source lacks %s:\n%s", want, src)
		}
	}
	for _, unwanted := range []string{"sk-secret", "primary:", "budgets:", "access_rules:", "null"} {
		if strings.Contains(src, unwanted) {
			t.Errorf("source has %s:\n%s", unwanted, src)
		}
	}
	if n := strings.Count(src, `"preserves"`); n != 1 {
		t.Errorf("%d preserves lists, want the compat channel's alone:\n%s", n, src)
	}
}
