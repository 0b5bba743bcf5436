package compiler

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// TestUsageAPIKeysReachTheGraph: a provider's usage_api ids are carried
// into the graph as written; a provider without one has none; an empty id
// is refused.
func TestUsageAPIKeysReachTheGraph(t *testing.T) {
	withKeys := strings.Replace(testCatalog, `channels: native:`, `usage_api: {key_id: "key_abc", workspace_id: "wrk_1"}
	channels: native:`, 1)
	g := mustCompile(t, writePolicy(t, map[string]string{"catalog.cue": withKeys, "profiles.cue": `profiles: a: {}`}))
	// The schema fills settle_delay and tolerance, which reconcile reads.
	want := plan.UsageAPI{KeyID: "key_abc", WorkspaceID: "wrk_1", SettleDelayMS: 24 * 3600 * 1000, Tolerance: 0.01}
	if a := g.Providers[0].UsageAPI; a == nil || *a != want {
		t.Fatalf("usage_api %+v, want %+v", a, want)
	}
	g = mustCompile(t, writePolicy(t, map[string]string{"catalog.cue": testCatalog, "profiles.cue": `profiles: a: {}`}))
	if a := g.Providers[0].UsageAPI; a != nil {
		t.Errorf("a provider without usage_api: %+v", a)
	}
	empty := strings.Replace(testCatalog, `channels: native:`, `usage_api: key_id: ""
	channels: native:`, 1)
	if _, err := Compile(writePolicy(t, map[string]string{"catalog.cue": empty, "profiles.cue": `profiles: a: {}`})); err == nil || !strings.Contains(err.Error(), "key_id") {
		t.Errorf("an empty key_id: %v, want it refused", err)
	}
}
