package compiler

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// TestUsageAPIReconcileFields: a provider's usage API, its admin key's
// variable, settle delay and tolerance reach the graph, the defaults
// filled; an admin key written in place of its variable, an api without
// the key's variable, and a negative settle delay are refused.
func TestUsageAPIReconcileFields(t *testing.T) {
	with := func(block string) map[string]string {
		return map[string]string{"catalog.cue": strings.Replace(testCatalog, `channels: native:`, block+"\n\tchannels: native:", 1), "profiles.cue": `profiles: a: {}`}
	}
	g := mustCompile(t, writePolicy(t, with(`usage_api: {api: "openai", admin_key_env: "OPENAI_ADMIN_KEY", settle_delay: "36h", tolerance: 0.02}`)))
	want := plan.UsageAPI{API: "openai", AdminKeyEnv: "OPENAI_ADMIN_KEY", SettleDelayMS: 36 * 3600 * 1000, Tolerance: 0.02}
	if a := g.Providers[0].UsageAPI; a == nil || *a != want {
		t.Fatalf("usage_api %+v, want %+v", a, want)
	}
	g = mustCompile(t, writePolicy(t, with(`usage_api: {api: "openai", admin_key_env: "OPENAI_ADMIN_KEY"}`)))
	want = plan.UsageAPI{API: "openai", AdminKeyEnv: "OPENAI_ADMIN_KEY", SettleDelayMS: 24 * 3600 * 1000, Tolerance: 0.01}
	if a := g.Providers[0].UsageAPI; a == nil || *a != want {
		t.Fatalf("defaults: usage_api %+v, want %+v", a, want)
	}
	for block, wantErr := range map[string]string{
		`usage_api: {api: "openai", admin_key_env: "sk-admin-abcdefghijklmnopqrstuvwxyz0123456789"}`: "admin_key_env",
		`usage_api: {api: "openai"}`:                                          "admin_key_env go together",
		`usage_api: {admin_key_env: "K"}`:                                     "admin_key_env go together",
		`usage_api: {api: "openai", admin_key_env: "K", settle_delay: "-1h"}`: "settle_delay",
		`usage_api: {api: "gemini", admin_key_env: "K"}`:                      "usage_api.api:",
	} {
		_, err := Compile(writePolicy(t, with(block)))
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want an error naming %s", block, err, wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "sk-admin-") {
			t.Errorf("%s: the error echoes the key: %v", block, err)
		}
	}
}
