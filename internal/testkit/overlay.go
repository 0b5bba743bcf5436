package testkit

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/pistra/pistra/schema"
)

// OverlayClaim is one channel's claim in an overlay.
type OverlayClaim struct {
	Preserves  []string          `json:"preserves"`
	VerifiedAt string            `json:"verified_at"`
	VerifiedBy string            `json:"verified_by"`
	Evidence   map[string]string `json:"evidence"`
}

// Overlays is an overlay file's content: overlay name → provider →
// channel → claim.
type Overlays map[string]map[string]map[string]OverlayClaim

// ParseOverlay reads an overlay file with CUE's own parser and evaluator,
// holds it to the schema's #Overlay, the format policies are unified with
// (with nothing else at the top level but its package clause and
// overlays), and returns its claims. What the compiler checks beyond the
// schema (a claim's date, its capabilities, the channel it names) is
// checked by compiling the overlay with its policy.
func ParseOverlay(t testing.TB, src []byte) Overlays {
	t.Helper()
	ctx := cuecontext.New()
	file := ctx.CompileBytes(src, cue.Filename("overlay.cue"))
	if err := file.Err(); err != nil {
		t.Fatalf("overlay is not CUE: %v\n%s", err, src)
	}
	defs := ctx.CompileBytes(schema.PolicyCUE, cue.Filename("policy.cue"))
	format := ctx.CompileString("close({overlays: [string]: #Overlay})", cue.Filename("format.cue"), cue.Scope(defs))
	if err := format.Err(); err != nil {
		t.Fatalf("the schema's #Overlay: %v", err)
	}
	v := format.Unify(file)
	if err := v.Validate(cue.Concrete(true)); err != nil {
		t.Fatalf("overlay is not of the format: %v\n%s", err, src)
	}
	var out struct {
		Overlays map[string]struct {
			Claims map[string]map[string]OverlayClaim `json:"claims"`
		} `json:"overlays"`
	}
	if err := v.Decode(&out); err != nil {
		t.Fatalf("decoding the overlay: %v", err)
	}
	o := Overlays{}
	for name, ov := range out.Overlays {
		o[name] = ov.Claims
	}
	return o
}
