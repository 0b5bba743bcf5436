package caps

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// TestDocsMatchReaders keeps the documentation true to the readers: one
// entry per capability in bit order, and on every route exactly the
// capabilities the route's reader can report are documented as detected
// there.
func TestDocsMatchReaders(t *testing.T) {
	names := plan.CapNames()
	if len(Docs) != len(names) {
		t.Fatalf("%d docs for %d capabilities", len(Docs), len(names))
	}
	for i, d := range Docs {
		if d.Cap.String() != names[i] {
			t.Errorf("Docs[%d] is %s, want %s (bit order)", i, d.Cap, names[i])
		}
		if (d.NotRead == "") == (len(d.Detected) == 0) {
			t.Errorf("%s: give either detections or why it is never read", d.Cap)
		}
	}
	for _, route := range plan.Routes {
		var documented plan.CapSet
		for _, d := range Docs {
			for _, det := range d.Detected {
				for _, r := range det.Routes {
					if r == route {
						documented |= plan.Of(d.Cap)
					}
				}
			}
		}
		if got := Detectable(route); documented != got {
			t.Errorf("%s: documented as detecting %s, the reader detects %s", route, documented, got)
		}
	}
}

func TestReferenceWraps(t *testing.T) {
	lines := Reference(72)
	for _, l := range lines {
		if len(l) > 72 && strings.Contains(l, " ") {
			t.Errorf("line over 72 columns: %q", l)
		}
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"strict_tools: ", "  chat_completions: tools[].function.strict is true.", "translation anthropic_openai drops it.",
		"usage_details: ", "never read from a body"} {
		if !strings.Contains(text, want) {
			t.Errorf("reference lacks %q:\n%s", want, text)
		}
	}
}
