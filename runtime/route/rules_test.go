package route

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// skipText renders skips as provider:reason.
func skipText(g *plan.Graph, sks []plan.Skip) string {
	out := make([]string, len(sks))
	for i, sk := range sks {
		out[i] = g.Providers[sk.Provider].Name + ":" + sk.Reason
	}
	return strings.Join(out, ",")
}

// TestKeyRules: the rules that read the key take candidates out as skips
// after the build's, deployment-wide rules first; a plan they empty is
// refused with the rule's own code and message; a rule that cannot be
// evaluated denies.
func TestKeyRules(t *testing.T) {
	g := testGraph(t)
	tests := []struct {
		name, key, model string
		attempt, skips   string
		code             dialect.Code
		message          string
	}{
		{"a partner keeps vendor", "partner-a", "tools", "vendor:vendor-large,oa:gpt-4o", "", "", ""},
		{"others lose vendor", "someone", "tools", "oa:gpt-4o", "vendor:vendor_partners_only", "", ""},
		{"a plan emptied is the rule's refusal", "someone", "compat", "", "vendor:vendor_partners_only",
			"vendor_partners_only", `denied by access rule "vendor-for-partners"; no provider may serve model "compat" for this key`},
		{"the rule's message leads", "blocked", "gpt", "", "oa:key_blocked", "key_blocked", "this key is blocked; "},
		{"deployment-wide first", "blocked", "tools", "", "vendor:key_blocked,oa:key_blocked", "key_blocked", "this key is blocked; "},
		{"build skips come first", "blocked", "claude", "", "oa:fidelity_loss,an:key_blocked", "key_blocked", ""},
		{"an evaluation error denies", "weird", "gpt", "", "oa:weird_key", "weird_key", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := LoadRules(g, profRuled, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			route := plan.RouteChatCompletions
			if tt.model == "claude" {
				route = plan.RouteMessages
			}
			d, e := Decide(g, Query{Profile: profRuled, Route: route, Model: tt.model}, Fixed(0), rules, nil)
			if got := skipText(g, d.Skips); got != tt.skips {
				t.Errorf("skips %q, want %q", got, tt.skips)
			}
			if tt.code == "" {
				if got := names(g, d.Candidates, d.Selection.Attempt); e != nil || got != tt.attempt {
					t.Errorf("attempt %q (refusal %v), want %q", got, e, tt.attempt)
				}
				return
			}
			if e == nil || e.Code != tt.code || e.Status != 403 || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("refusal %+v, want %s saying %q", e, tt.code, tt.message)
			}
		})
	}
}

// TestKeyRulesLeaveAWholePlanUncopied: a plan no rule touches is the
// graph's own list, and a denial lands in the rules' buffers.
func TestKeyRulesLeaveAWholePlanUncopied(t *testing.T) {
	g := testGraph(t)
	q := Query{Profile: profRuled, Route: plan.RouteChatCompletions, Model: "tools"}
	p, _ := g.Lookup(q.Profile, q.Route, q.Model)
	own := g.CandidatesOf(p)
	rules, err := LoadRules(g, q.Profile, "partner-a")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := Decide(g, q, Fixed(0), rules, nil); &d.Candidates[0] != &own[0] {
		t.Errorf("a plan the rules leave whole was copied")
	}
	rules.key = "someone"
	if d, _ := Decide(g, q, Fixed(0), rules, nil); &d.Candidates[0] != &rules.cands[0] || &own[0] == &rules.cands[0] {
		t.Errorf("a denial did not land in the rules' buffer")
	}
}

// TestRulesReset: rules reset for another key decide for it alone, on
// the buffers they kept; reset to nothing they deny nothing.
func TestRulesReset(t *testing.T) {
	g := testGraph(t)
	loaded, err := LoadRules(g, profRuled, "")
	if err != nil {
		t.Fatal(err)
	}
	q := Query{Profile: profRuled, Route: plan.RouteChatCompletions, Model: "tools"}
	var r Rules
	for _, tc := range []struct{ key, skips string }{
		{"someone", "vendor:vendor_partners_only"},
		{"partner-b", ""},
		{"blocked", "vendor:key_blocked,oa:key_blocked"},
		{"someone", "vendor:vendor_partners_only"},
	} {
		r.Reset(loaded.progs, g.RequestRules(profRuled), tc.key)
		d, _ := Decide(g, q, Fixed(0), &r, nil)
		if got := skipText(g, d.Skips); got != tc.skips {
			t.Errorf("key %s: skips %q, want %q", tc.key, got, tc.skips)
		}
	}
	r.Reset(nil, nil, "")
	if d, e := Decide(g, q, Fixed(0), &r, nil); e != nil || len(d.Skips) != 0 || r.progs != nil {
		t.Errorf("rules reset to nothing: skips %v, refusal %v", d.Skips, e)
	}
}

// TestLoadRulesCompilesOnlyWhenNeeded: a profile with no rule that reads
// the key loads none, and compiles no CEL (a graph's broken CEL is then
// not its problem).
func TestLoadRulesCompilesOnlyWhenNeeded(t *testing.T) {
	g := testGraph(t)
	g.Rules = nil
	g.CEL = []plan.Expr{{Kind: "rule"}} // not loadable
	r, err := LoadRules(g, profDefault, "k")
	if err != nil || r.progs != nil || len(r.rules) != 0 {
		t.Errorf("rules %+v, err %v", r, err)
	}
	if _, err := LoadRules(g, profRuled, "k"); err == nil || !strings.HasPrefix(err.Error(), "cel: ") {
		t.Errorf("broken CEL for a profile with rules: %v", err)
	}
}
