package route

import (
	"errors"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// countingCaps counts how often the body's capabilities are asked for.
type countingCaps struct {
	asked int
	used  plan.CapSet
}

func (c *countingCaps) Caps() plan.CapSet { c.asked++; return c.used }
func (c *countingCaps) Body() []byte      { return nil }

// TestCapsReadOnlyWhenItMatters: a native-only plan never asks the reader,
// nor does one whose every candidate keeps all a route's reader can see.
func TestCapsReadOnlyWhenItMatters(t *testing.T) {
	route := plan.RouteChatCompletions
	native := plan.Candidate{Tier: plan.TierNative, Preserves: plan.AllCaps}
	keepsReadable := plan.Candidate{Tier: plan.TierProviderCompat, Preserves: caps.Detectable(route)}
	dropsStrict := plan.Candidate{Tier: plan.TierProviderCompat, Preserves: caps.Detectable(route) &^ plan.Of(plan.CapStrictTools)}
	tests := []struct {
		name       string
		nativeOnly bool
		cands      []plan.Candidate
		asked      int
	}{
		{"native only", true, []plan.Candidate{native, native}, 0},
		{"compat keeping everything readable", false, []plan.Candidate{keepsReadable, native}, 0},
		{"compat dropping strict tools", false, []plan.Candidate{native, dropsStrict}, 1},
	}
	for _, tt := range tests {
		src := &countingCaps{used: plan.Of(plan.CapStrictTools)}
		used, read := capsUsed(tt.nativeOnly, tt.cands, route, src)
		if src.asked != tt.asked || read != (tt.asked > 0) || (used != 0) != read {
			t.Errorf("%s: asked %d times (read %v, used %v), want %d", tt.name, src.asked, read, used, tt.asked)
		}
	}
}

// BenchmarkCapsUsed is selection's capability step on a 1 MiB chat body
// that uses strict tools: a native-only plan never reads it (the cost is
// flat, whatever the body), a plan with a compat channel reads it once.
func BenchmarkCapsUsed(b *testing.B) {
	text := strings.Repeat(`a long conversation, with \"quoted\" words; `, (1<<20)/46)
	payload := []byte(`{"model":"m","messages":[{"role":"user","content":"` + text + `"}],` +
		`"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object"}}}]}`)
	native := plan.Candidate{Tier: plan.TierNative, Preserves: plan.AllCaps}
	compat := plan.Candidate{Tier: plan.TierProviderCompat}
	for _, bc := range []struct {
		name  string
		plan  plan.Plan
		cands []plan.Candidate
		want  plan.CapSet
	}{
		{"native_only", plan.Plan{NativeOnly: true}, []plan.Candidate{native}, 0},
		{"with_compat", plan.Plan{}, []plan.Candidate{compat, native}, plan.Of(plan.CapStrictTools)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var r caps.Reader
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(plan.RouteChatCompletions, payload)
				if used, _ := capsUsed(bc.plan.NativeOnly, bc.cands, plan.RouteChatCompletions, &r); used != bc.want {
					b.Fatalf("used %v, want %v", used, bc.want)
				}
			}
		})
	}
}

// names renders candidates as provider:model.
func names(g *plan.Graph, cands []plan.Candidate, idx []int) string {
	out := make([]string, len(idx))
	for i, ci := range idx {
		out[i] = g.Providers[cands[ci].Provider].Name + ":" + cands[ci].Model
	}
	return strings.Join(out, ",")
}

// TestDecideSelection: what the body uses chooses among the plan's
// candidates by bitmask, a profile's on_fidelity_loss decides what happens
// when none keeps it all, and a plan that cannot lose anything is never
// read.
func TestDecideSelection(t *testing.T) {
	g := testGraph(t)
	strict, structured := plan.Of(plan.CapStrictTools), plan.Of(plan.CapStructuredOutput)
	tests := []struct {
		name          string
		profile       int
		route         plan.Route
		model         string
		uses          plan.CapSet
		attempt       string
		passed        string
		read, lossy   bool
		used          plan.CapSet
		code          dialect.Code
		passedMissing plan.CapSet
	}{
		{"nothing used keeps the primary first", profDefault, plan.RouteChatCompletions, "tools", 0,
			"vendor:vendor-large,oa:gpt-4o", "", true, false, 0, "", 0},
		{"what compat keeps keeps it first", profDefault, plan.RouteChatCompletions, "tools", structured,
			"vendor:vendor-large,oa:gpt-4o", "", true, false, structured, "", 0},
		{"strict tools pass over compat", profDefault, plan.RouteChatCompletions, "tools", strict,
			"oa:gpt-4o", "vendor:vendor-large", true, false, strict, "", strict},
		{"strict tools with compat alone are refused", profDefault, plan.RouteChatCompletions, "compat", strict,
			"", "vendor:vendor-large", true, false, strict, dialect.CodeFidelityLoss, strict},
		{"allow serves the lossy best", profLenient, plan.RouteChatCompletions, "compat", strict,
			"vendor:vendor-large", "", true, true, strict, "", 0},
		{"a native-only plan is not read", profDefault, plan.RouteChatCompletions, "gpt", strict,
			"oa:gpt-4o", "", false, false, 0, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, e := Decide(g, Query{Profile: tt.profile, Route: tt.route, Model: tt.model}, Fixed(tt.uses), nil, nil)
			if (e == nil) != (tt.code == "") || e != nil && e.Code != tt.code {
				t.Fatalf("refusal %+v, want code %q", e, tt.code)
			}
			var passed []int
			for _, l := range d.Selection.Passed {
				passed = append(passed, l.Candidate)
				if l.Missing != tt.passedMissing {
					t.Errorf("passed over %d missing %v, want %v", l.Candidate, l.Missing, tt.passedMissing)
				}
			}
			if got := names(g, d.Candidates, d.Selection.Attempt); got != tt.attempt {
				t.Errorf("attempt %q, want %q", got, tt.attempt)
			}
			if got := names(g, d.Candidates, passed); got != tt.passed {
				t.Errorf("passed over %q, want %q", got, tt.passed)
			}
			if d.Read != tt.read || d.Used != tt.used || d.Selection.Lossy != tt.lossy || d.Selection.Rejected != (tt.code != "") {
				t.Errorf("read %v used %v lossy %v rejected %v, want %v %v %v %v", d.Read, d.Used, d.Selection.Lossy,
					d.Selection.Rejected, tt.read, tt.used, tt.lossy, tt.code != "")
			}
		})
	}
}

// TestDecideReusesTheOrderBuffer: a buffer with room holds the attempt
// order, so pistrad's pooled requests do not allocate one each.
func TestDecideReusesTheOrderBuffer(t *testing.T) {
	g := testGraph(t)
	buf := make([]int, 0, 4)
	d, e := Decide(g, Query{Profile: profDefault, Route: plan.RouteChatCompletions, Model: "tools"}, Fixed(0), nil, buf)
	if e != nil || len(d.Selection.Attempt) != 2 || &d.Selection.Attempt[0] != &buf[:1][0] {
		t.Errorf("attempt %v (refusal %v) is not held in the buffer given", d.Selection.Attempt, e)
	}
}

// TestDecideKeepsWhatItDecided: a refusal still carries the decision up to
// it, for the downgrade counts and the log line's origins.
func TestDecideKeepsWhatItDecided(t *testing.T) {
	g := testGraph(t)
	q := Query{Profile: profDefault, Route: plan.RouteChatCompletions, Model: "compat"}
	d, e := Decide(g, q, Fixed(plan.Of(plan.CapStrictTools)), nil, nil)
	if e == nil || d.Query != q || d.Plan == nil || len(d.Candidates) != 1 || d.Origins() != vendorOrigin {
		t.Errorf("decision %+v, refusal %v", d, e)
	}
	d, e = Decide(g, Query{Profile: profDefault, Route: plan.RouteChatCompletions, Model: "nope"}, Fixed(0), nil, nil)
	if e == nil || d.Plan != nil || d.Query.Model != "nope" {
		t.Errorf("no plan: decision %+v, refusal %v", d, e)
	}
}

// TestAttempts: the one-shot decision the CLI asks answers with the
// candidates in attempt order, the key's rules applied, or the refusal as
// a *dialect.Error.
func TestAttempts(t *testing.T) {
	g := testGraph(t)
	tools := Query{Profile: profRuled, Route: plan.RouteChatCompletions, Model: "tools"}
	for _, tc := range []struct {
		key, want string
		code      dialect.Code
	}{
		{"partner-a", "vendor:vendor-large,oa:gpt-4o", ""},
		{"someone", "oa:gpt-4o", ""},
		{"blocked", "", "key_blocked"},
	} {
		cands, err := Attempts(g, tools, tc.key, nil, 0)
		var e *dialect.Error
		if tc.code != "" {
			if !errors.As(err, &e) || e.Code != tc.code || cands != nil {
				t.Errorf("key %s: %v %v, want refusal %s", tc.key, cands, err, tc.code)
			}
			continue
		}
		idx := make([]int, len(cands))
		for i := range idx {
			idx[i] = i
		}
		if got := names(g, cands, idx); err != nil || got != tc.want {
			t.Errorf("key %s: %q %v, want %q", tc.key, got, err, tc.want)
		}
	}
}
