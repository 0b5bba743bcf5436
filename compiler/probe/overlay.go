package probe

import (
	"bytes"
	"fmt"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/literal"
)

// Overlay is the claim a run writes, as a CUE file of the policy's
// package declaring one overlay, named by OverlayName:
//
//	overlays: "probe-<provider>-<channel>": claims: <provider>: <channel>: {
//		preserves, verified_at, verified_by: "probe", evidence: {<cap>: "..."}
//	}
//
// It carries the channel's claim and nothing else: never what a profile
// requires (which no black box can see and which stays the operator's),
// never a change to a preset (it only layers over one).
type Overlay struct {
	// Package is the policy's CUE package.
	Package           string
	Provider, Channel string
	// Date is the day observed, YYYY-MM-DD.
	Date   string
	Report *Report
}

// VerifiedBy is what a probe's claims say verified them.
const VerifiedBy = "probe"

// Marker starts every overlay file the probe writes; a file without it is
// not the probe's to overwrite.
const Marker = "// Written by pistrac probe"

// OverlayName is the name of the overlay a probe of channel writes.
func OverlayName(provider, channel string) string {
	return "probe-" + provider + "-" + channel
}

// Render writes the overlay as formatted CUE.
func (o *Overlay) Render() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s on %s: what a black box saw\n", Marker, o.Date)
	fmt.Fprintf(&b, "// provider %s, channel %s, honour. Run the probe again to refresh\n", o.Provider, o.Channel)
	b.WriteString("// it: edits here are overwritten.\n")
	for _, r := range o.Report.Routes {
		fmt.Fprintf(&b, "//\n// route %s: %s\n", r.Route, oneLine(r.Evidence))
	}
	fmt.Fprintf(&b, "package %s\n\n", o.Package)
	fmt.Fprintf(&b, "overlays: %s: claims: %s: %s: {\n", label(OverlayName(o.Provider, o.Channel)), label(o.Provider), label(o.Channel))
	names := o.Report.Preserves().Names()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = quote(n)
	}
	fmt.Fprintf(&b, "preserves: [%s]\n", strings.Join(quoted, ", "))
	fmt.Fprintf(&b, "verified_at: %s\nverified_by: %s\n", quote(o.Date), quote(VerifiedBy))
	b.WriteString("// evidence: per capability probed, what was observed.\nevidence: {\n")
	for _, f := range o.Report.Findings {
		fmt.Fprintf(&b, "%s: %s\n", label(f.Cap.String()), quote(f.Evidence))
	}
	b.WriteString("}\n}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("rendering the overlay: %w", err)
	}
	return out, nil
}

// label writes a CUE field label, quoted only where it must be.
func label(s string) string {
	if ast.StringLabelNeedsQuoting(s) {
		return quote(s)
	}
	return s
}

func quote(s string) string { return literal.String.Quote(s) }

// oneLine keeps a comment on one line whatever an endpoint answered.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
