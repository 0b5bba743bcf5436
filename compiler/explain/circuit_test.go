package explain

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

// TestDiffCircuit: naming, changing and removing a provider's circuit
// breaker are settings changes the diff shows.
func TestDiffCircuit(t *testing.T) {
	a := bundletest.DefaultPolicy()
	b := cloneGraph(t, a)
	b.Providers[1].Circuit = &plan.Circuit{Failures: 5, CoolDownMS: 30_000, HalfOpenProbes: 1}
	c := cloneGraph(t, b)
	c.Providers[1].Circuit.CoolDownMS = 1500
	for _, tt := range []struct {
		from, to *plan.Graph
		want     string
	}{
		{a, b, "~ fake-openai: circuit: (none) -> open after 5 failures, cool down 30s, 1 half-open probes"},
		{b, c, "~ fake-openai: circuit: open after 5 failures, cool down 30s, 1 half-open probes -> open after 5 failures, cool down 1500ms, 1 half-open probes"},
		{c, a, "~ fake-openai: circuit: open after 5 failures, cool down 1500ms, 1 half-open probes -> (none)"},
	} {
		var out strings.Builder
		if _, err := Diff(&out, tt.from, tt.to, nil, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("diff lacks %q:\n%s", tt.want, out.String())
		}
	}
}
