package route

import (
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// Bits of suspendGraph's rules: the deployment's, then the profile's.
const (
	ruleNoVendor plan.RuleSet = 1 << iota // static, deployment-wide
	ruleBlocked                           // reads the key, deployment-wide
	ruleNoOA                              // static, the profile's
	ruleAlsoOA                            // static, the profile's, denies what no-oa does
	ruleSlowKey                           // reads the key, the profile's
)

// suspendGraph has one plan, "m" on chat, whose both candidates static
// rules deny: vendor (compat, dropping strict tools) by a deployment-wide
// rule, oa (native) by two of the profile's own. Two rules read the key.
func suspendGraph(t *testing.T) *plan.Graph {
	b := testkit.NewGraph("sha256:suspend")
	compat, native := b.CompatAndNative(plan.RouteChatCompletions)
	compat.Denied, native.Denied = ruleNoVendor, ruleNoOA|ruleAlsoOA
	skips := []plan.Skip{
		{Provider: compat.Provider, Channel: 0, Model: compat.Model, Reason: "vendor_denied", Rules: ruleNoVendor},
		{Provider: native.Provider, Channel: 0, Model: native.Model, Reason: "oa_denied", Rules: ruleNoOA | ruleAlsoOA},
	}
	table := b.Table(plan.Entry{Route: plan.RouteChatCompletions, Model: "m",
		Plan: b.DeniedPlan(plan.Plan{NativeOnly: true}, []plan.Candidate{compat, native}, skips)})
	b.Rules = []plan.Rule{
		rule(t, &b.Graph, "no-vendor", "vendor_denied", "", `provider == "vendor"`),
		rule(t, &b.Graph, "blocked-key", "key_blocked", "", `key == "blocked"`),
	}
	b.Profile(plan.Profile{Name: "p", Table: table, Rules: []plan.Rule{
		rule(t, &b.Graph, "no-oa", "oa_denied", "", `provider == "oa"`),
		rule(t, &b.Graph, "also-oa", "oa_twice", "", `provider == "oa" && model == "m"`),
		rule(t, &b.Graph, "slow-key", "key_slow", "", `key == "slow" && provider == "vendor"`),
	}})
	return b.Build()
}

// liftedText renders lifted denials as provider:code:rules.
func liftedText(g *plan.Graph, lifted []plan.Skip) string {
	out := make([]string, len(lifted))
	for i, l := range lifted {
		out[i] = g.Providers[l.Provider].Name + ":" + l.Reason + ":" + strings.Join(ruleNamesOf(g, l.Rules), "+")
	}
	return strings.Join(out, ",")
}

func ruleNamesOf(g *plan.Graph, s plan.RuleSet) []string {
	var out []string
	for ; s != 0; s &= s - 1 {
		out = append(out, g.ProfileRule(0, s.First()).Name)
	}
	return out
}

// TestSuspendedRulesLifted: a suspended rule denies nothing. A candidate
// the build folded a denial into is restored in attempt order once every
// rule denying it is suspended, and until then is denied with the code of
// the first that is not; a suspended rule that reads the key is passed
// over. The decision names what each suspension let through, and lifting
// it (the same rules, nothing suspended) denies again.
func TestSuspendedRulesLifted(t *testing.T) {
	g := suspendGraph(t)
	tests := []struct {
		name      string
		key       string
		suspended plan.RuleSet
		attempt   string
		skips     string
		lifted    string
		code      dialect.Code
	}{
		{"nothing suspended: the first rule's refusal", "k", 0, "", "vendor:vendor_denied,oa:oa_denied", "", "vendor_denied"},
		{"a deployment-wide rule suspended", "k", ruleNoVendor, "vendor:vendor-large", "oa:oa_denied",
			"vendor:vendor_denied:no-vendor", ""},
		{"one of two denying rules suspended: the other's code", "k", ruleNoOA, "", "vendor:vendor_denied,oa:oa_twice", "", "vendor_denied"},
		{"both of a profile's rules suspended", "k", ruleNoOA | ruleAlsoOA, "oa:gpt-4o", "vendor:vendor_denied",
			"oa:oa_denied:no-oa+also-oa", ""},
		{"everything static suspended: attempt order kept", "k", ruleNoVendor | ruleNoOA | ruleAlsoOA,
			"vendor:vendor-large,oa:gpt-4o", "", "vendor:vendor_denied:no-vendor,oa:oa_denied:no-oa+also-oa", ""},
		{"a rule reading the key still denies a restored candidate", "blocked", ruleNoVendor, "", "oa:oa_denied,vendor:key_blocked",
			"", "oa_denied"},
		{"a rule reading the key suspended too", "blocked", ruleNoVendor | ruleBlocked, "vendor:vendor-large", "oa:oa_denied",
			"vendor:vendor_denied:no-vendor+blocked-key", ""},
		{"a profile's rule reading the key, suspended", "slow", ruleNoVendor | ruleSlowKey, "vendor:vendor-large", "oa:oa_denied",
			"vendor:vendor_denied:no-vendor+slow-key", ""},
		{"and not suspended", "slow", ruleNoVendor, "", "oa:oa_denied,vendor:key_slow", "", "oa_denied"},
	}
	rules, err := LoadRules(g, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	q := Query{Profile: 0, Route: plan.RouteChatCompletions, Model: "m"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One Rules for every case, as a pooled request reuses it.
			rules.Reset(rules.progs, g.RequestRules(0), tt.key)
			rules.Suspend(tt.suspended)
			d, e := Decide(g, q, Fixed(0), rules, nil)
			if got := skipText(g, d.Skips); got != tt.skips {
				t.Errorf("skips %q, want %q", got, tt.skips)
			}
			if got := liftedText(g, d.Lifted); got != tt.lifted {
				t.Errorf("lifted %q, want %q", got, tt.lifted)
			}
			if tt.code != "" {
				if e == nil || e.Code != tt.code || e.Status != 403 {
					t.Fatalf("refusal %+v, want 403 %s", e, tt.code)
				}
				return
			}
			if got := names(g, d.Candidates, d.Selection.Attempt); e != nil || got != tt.attempt {
				t.Errorf("attempt %q (refusal %v), want %q", got, e, tt.attempt)
			}
		})
	}
	p, _ := g.Lookup(0, q.Route, q.Model)
	if sk := g.SkipsOf(p); sk[0].Reason != "vendor_denied" || sk[1].Reason != "oa_denied" || len(g.CandidatesOf(p)) != 0 {
		t.Errorf("a decision rewrote the plan's own lists: skips %+v", sk)
	}
}

// TestRestoredCandidatesAreReadForCapabilities: a plan the build left with
// native candidates only is not read for capabilities, but one a
// suspension restored a compat candidate to is, so the candidate that
// drops what the body uses is passed over.
func TestRestoredCandidatesAreReadForCapabilities(t *testing.T) {
	g := suspendGraph(t)
	rules, err := LoadRules(g, 0, "k")
	if err != nil {
		t.Fatal(err)
	}
	rules.Suspend(ruleNoVendor | ruleNoOA | ruleAlsoOA)
	q := Query{Profile: 0, Route: plan.RouteChatCompletions, Model: "m"}
	d, e := Decide(g, q, Fixed(plan.Of(plan.CapStrictTools)), rules, nil)
	if e != nil || !d.Read || names(g, d.Candidates, d.Selection.Attempt) != "oa:gpt-4o" || len(d.Selection.Passed) != 1 {
		t.Fatalf("read %v, attempt %q, passed %+v, refusal %v", d.Read, names(g, d.Candidates, d.Selection.Attempt), d.Selection.Passed, e)
	}
}

// TestAttemptsSuspended: Attempts lifts the rules it is given by name.
func TestAttemptsSuspended(t *testing.T) {
	g := suspendGraph(t)
	q := Query{Profile: 0, Route: plan.RouteChatCompletions, Model: "m"}
	if _, err := Attempts(g, q, "k", []string{"no-oa"}, 0); err == nil {
		t.Fatal("served with also-oa standing")
	}
	cands, err := Attempts(g, q, "k", []string{"also-oa", "no-oa"}, 0)
	if err != nil || len(cands) != 1 || g.Providers[cands[0].Provider].Name != "oa" {
		t.Fatalf("attempts %+v, %v", cands, err)
	}
	if got := ruleNamesOf(g, g.RulesNamed(0, func(n string) bool { return slices.Contains([]string{"slow-key", "no-vendor"}, n) })); !slices.Equal(got, []string{"no-vendor", "slow-key"}) {
		t.Errorf("RulesNamed: %q", got)
	}
}
