package probe_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/compiler/probe"
	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// TestOverlayRoundTrips: the overlay a run renders is CUE of the overlay
// format (read by CUE's own evaluator) and reads back as exactly the claim
// observed: preserves, the day, verified_by probe, one piece of evidence
// per capability probed; the routes found go in comments only.
func TestOverlayRoundTrips(t *testing.T) {
	drops := plan.Of(plan.CapStrictTools, plan.CapMultiChoice)
	_, r, _ := run(t, fakeprovider.DialectOpenAI, drops)
	o := probe.Overlay{Package: "pistra", Provider: "my-vendor", Channel: "openai-compat", Date: "2026-12-01", Report: r}
	src, err := o.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(src), probe.Marker) || !strings.Contains(string(src), "// route responses: answered") {
		t.Errorf("overlay lacks the marker or the routes' comment:\n%s", src)
	}
	overlays := testkit.ParseOverlay(t, src)
	name := probe.OverlayName("my-vendor", "openai-compat")
	if len(overlays) != 1 || len(overlays[name]) != 1 || len(overlays[name]["my-vendor"]) != 1 {
		t.Fatalf("overlays %+v: want %s with the one claim", overlays, name)
	}
	claim := overlays[name]["my-vendor"]["openai-compat"]
	if want := (plan.AllCaps &^ drops).Names(); !slices.Equal(claim.Preserves, want) {
		t.Errorf("preserves %v, want %v", claim.Preserves, want)
	}
	if claim.VerifiedAt != "2026-12-01" || claim.VerifiedBy != probe.VerifiedBy {
		t.Errorf("verified %q by %q", claim.VerifiedAt, claim.VerifiedBy)
	}
	if len(claim.Evidence) != len(r.Findings) {
		t.Errorf("%d pieces of evidence, want %d", len(claim.Evidence), len(r.Findings))
	}
	for _, f := range r.Findings {
		if claim.Evidence[f.Cap.String()] != f.Evidence {
			t.Errorf("evidence %s: %q, want %q", f.Cap, claim.Evidence[f.Cap.String()], f.Evidence)
		}
	}
}

// TestOverlayEmptyClaim: an endpoint that honours nothing is written as an
// explicit empty list, which replaces a claim as wholesale as any other.
func TestOverlayEmptyClaim(t *testing.T) {
	_, r, _ := run(t, fakeprovider.DialectOpenAI, plan.AllCaps)
	src, err := (&probe.Overlay{Package: "policy", Provider: "v", Channel: "c", Date: "2026-12-01", Report: r}).Render()
	if err != nil {
		t.Fatal(err)
	}
	claim := testkit.ParseOverlay(t, src)["probe-v-c"]["v"]["c"]
	if claim.Preserves == nil || len(claim.Preserves) != 0 || !strings.Contains(string(src), "package policy\n") {
		t.Errorf("preserves %#v in:\n%s", claim.Preserves, src)
	}
}
