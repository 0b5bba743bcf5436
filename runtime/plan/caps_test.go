package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestCapSet(t *testing.T) {
	cases := []struct {
		name  string
		set   CapSet
		names []string
		text  string
	}{
		{"empty", 0, []string{}, "[]"},
		{"one", Of(CapUsageDetails), []string{"usage_details"}, "[usage_details]"},
		{"bit order, not argument order", Of(CapMultiChoice, CapStrictTools), []string{"strict_tools", "multi_choice"}, "[strict_tools, multi_choice]"},
		{"a cap given twice counts once", Of(CapAudioInput, CapAudioInput), []string{"audio_input"}, "[audio_input]"},
		{"all", AllCaps, CapNames(), "[strict_tools, structured_output, prompt_caching, extended_thinking, usage_details, audio_input, multi_choice]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.set.Names(); !slices.Equal(got, c.names) {
				t.Errorf("Names = %q, want %q", got, c.names)
			}
			if got := c.set.String(); got != c.text {
				t.Errorf("String = %q, want %q", got, c.text)
			}
			if c.set.Len() != len(c.names) || len(c.set.Caps()) != len(c.names) {
				t.Errorf("Len %d, Caps %v, want %d", c.set.Len(), c.set.Caps(), len(c.names))
			}
			for _, n := range CapNames() {
				cp, ok := ParseCap(n)
				if !ok || cp.String() != n {
					t.Fatalf("ParseCap(%q) = %v, %v", n, cp, ok)
				}
				if c.set.Has(cp) != slices.Contains(c.names, n) {
					t.Errorf("Has(%s) = %v", n, c.set.Has(cp))
				}
			}
			b, err := json.Marshal(c.set)
			var back CapSet
			if err != nil || json.Unmarshal(b, &back) != nil || back != c.set {
				t.Errorf("JSON %s round-trips to %v (%v)", b, back, err)
			}
		})
	}
}

func TestCapSetRefusesUnknownNames(t *testing.T) {
	for _, in := range []string{`["strict_tools","telepathy"]`, `"strict_tools"`, `[1]`} {
		var s CapSet
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s read as %v", in, s)
		}
	}
	if _, ok := ParseCap("Strict_Tools"); ok {
		t.Errorf("ParseCap folds case")
	}
	if got := Cap(numCaps).String(); got != "cap(7)" {
		t.Errorf("an unnamed cap reads %q", got)
	}
}

// TestParseCaps: a comma-separated list, spaces and empty items ignored;
// an unknown name is refused with the names known.
func TestParseCaps(t *testing.T) {
	got, err := ParseCaps(" multi_choice,, strict_tools ")
	if err != nil || got != Of(CapMultiChoice, CapStrictTools) {
		t.Errorf("ParseCaps: %v, %v", got, err)
	}
	if got, err := ParseCaps(""); err != nil || got != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	if _, err := ParseCaps("strict_tools,telepathy"); err == nil || !strings.Contains(err.Error(), `unknown capability "telepathy" (known: strict_tools,`) {
		t.Errorf("unknown: %v", err)
	}
}
