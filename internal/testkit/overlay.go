package testkit

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// overlayFormat is the overlay file format pistrac probe writes and the
// policy loader layers, closed: one entry of overlays, whose claims
// replace a channel's claim wholesale.
const overlayFormat = `
overlays: [string]: close({
	claims: [string]: [string]: close({
		preserves: [...string]
		verified_at: =~"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
		verified_by: string
		evidence?: [string]: string
	})
})
`

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
// holds it to the overlay format (nothing else at the top level but its
// package clause and overlays) and returns its claims.
func ParseOverlay(t testing.TB, src []byte) Overlays {
	t.Helper()
	ctx := cuecontext.New()
	file := ctx.CompileBytes(src, cue.Filename("overlay.cue"))
	if err := file.Err(); err != nil {
		t.Fatalf("overlay is not CUE: %v\n%s", err, src)
	}
	format := ctx.CompileString("close({"+overlayFormat+"})", cue.Filename("format.cue"))
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
