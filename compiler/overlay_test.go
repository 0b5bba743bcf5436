package compiler

import (
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// TestOlderOverlayLoses: the winner is the newest claim, so an overlay
// read before the catalog's own claim was loses to it, and is listed as
// what that claim overrode; on the catalog claim's own date an overlay
// wins.
func TestOlderOverlayLoses(t *testing.T) {
	const catalog = `package pistra

providers: relay: {
	base_url: "https://relay.example.com/v1"
	models: m: {}
	channels: compat: {dialect: "openai", tier: "provider_compat", preserves: ["strict_tools"], verified_at: "2026-11-20", verified_by: "https://relay.example.com/docs"}
}
profiles: default: {}
keys: []
`
	for _, c := range []struct {
		date, origin, lost string
		preserves          plan.CapSet
	}{
		{"2026-11-01", "policy.cue", "overlay:z-old", plan.Of(plan.CapStrictTools)},
		{"2026-11-20", "overlay:z-old", "policy.cue", 0},
	} {
		dir := writePolicy(t, map[string]string{"policy.cue": catalog, "overlay.cue": `package pistra

overlays: "z-old": claims: relay: compat: {preserves: [], verified_at: "` + c.date + `", verified_by: "probe"}
`})
		ch := mustCompile(t, dir).Providers[0].Channels[0]
		if ch.Origin != c.origin || len(ch.Overrode) != 1 || ch.Overrode[0].Origin != c.lost {
			t.Errorf("overlay of %s: origin %q overrode %+v, want %q over %q", c.date, ch.Origin, ch.Overrode, c.origin, c.lost)
		}
		if ch.Preserves != c.preserves {
			t.Errorf("overlay of %s: preserves %v, want %v", c.date, ch.Preserves, c.preserves)
		}
	}
}
