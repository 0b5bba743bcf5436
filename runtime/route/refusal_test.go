package route

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// TestModelRefusals: a name without a plan is refused for what is wrong
// with it, each message listing what the key may use on the route.
func TestModelRefusals(t *testing.T) {
	g := testGraph(t)
	tests := []struct {
		name    string
		profile int
		route   plan.Route
		model   string
		status  int
		code    dialect.Code
		says    []string
	}{
		{"unknown", profDefault, plan.RouteChatCompletions, "nope", 404, dialect.CodeModelNotFound,
			[]string{`model "nope" does not exist`, "models available to this key: compat, gpt, tools"}},
		{"on another route", profDefault, plan.RouteMessages, "gpt", 404, dialect.CodeModelNotOnRoute,
			[]string{`model "gpt" is not served on /v1/messages; it answers on /v1/chat/completions`, "models available to this key: claude"}},
		{"not the profile's", profNarrow, plan.RouteChatCompletions, "tools", 403, dialect.CodeModelNotAllowed,
			[]string{`model "tools" is not allowed for this key`, "models available to this key: gpt"}},
		{"nothing on the route", profNarrow, plan.RouteEmbeddings, "gpt", 404, dialect.CodeModelNotOnRoute,
			[]string{"it answers on /v1/chat/completions", "this key may use no model here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := Decide(g, Query{Profile: tt.profile, Route: tt.route, Model: tt.model}, Fixed(0), nil, nil)
			if e == nil || e.Status != tt.status || e.Code != tt.code || e.Param != "model" {
				t.Fatalf("refusal %+v, want %d %s", e, tt.status, tt.code)
			}
			for _, s := range tt.says {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message lacks %q: %s", s, e.Message)
				}
			}
		})
	}
}

// TestNoCandidateListsEverySkip: a plan with nothing left names each skip,
// with its channel, translation and what it would miss, and answers
// no_candidate when no rule emptied it.
func TestNoCandidateListsEverySkip(t *testing.T) {
	g := testGraph(t)
	_, e := Decide(g, Query{Profile: profDefault, Route: plan.RouteChatCompletions, Model: "empty"}, Fixed(0), nil, nil)
	want := `no provider may serve model "empty" for this key: provider "vendor": model_denied`
	if e == nil || e.Code != dialect.CodeNoCandidate || e.Status != 403 || e.Message != want {
		t.Fatalf("refusal %+v, want no_candidate %q", e, want)
	}
	rules, err := LoadRules(g, profRuled, "blocked")
	if err != nil {
		t.Fatal(err)
	}
	_, e = Decide(g, Query{Profile: profRuled, Route: plan.RouteMessages, Model: "claude"}, Fixed(0), rules, nil)
	want = `this key is blocked; no provider may serve model "claude" for this key: ` +
		`provider "oa" channel "native" translated anthropic_openai: fidelity_loss [strict_tools]; provider "an" channel "native": key_blocked`
	if e == nil || e.Code != "key_blocked" || e.Message != want {
		t.Errorf("refusal %+v\nwant %q", e, want)
	}
}

// TestFidelityRefusal names every candidate passed over, what it drops
// and the provenance of that claim, in words and in the details; a
// translated candidate's claim is the translator's.
func TestFidelityRefusal(t *testing.T) {
	g := testGraph(t)
	used := plan.Of(plan.CapStrictTools, plan.CapStructuredOutput)
	_, e := Decide(g, Query{Profile: profDefault, Route: plan.RouteChatCompletions, Model: "compat"}, Fixed(used), nil, nil)
	if e == nil || e.Code != dialect.CodeFidelityLoss || e.Status != 400 || e.Fidelity == nil {
		t.Fatalf("refusal %+v", e)
	}
	want := dialect.Candidate{Provider: "vendor", Channel: "openai-compat", Tier: plan.TierProviderCompat, Model: "vendor-large",
		Lost: plan.Of(plan.CapStrictTools), Origin: vendorOrigin, VerifiedAt: "2026-11-20", VerifiedBy: vendorVerifiedBy}
	if f := e.Fidelity; f.Used != used || len(f.Candidates) != 1 || f.Candidates[0] != want {
		t.Errorf("details %+v, want used %v and %+v", f, used, want)
	}
	for _, s := range []string{`every way of serving model "compat" would drop a capability this request uses [strict_tools, structured_output]`,
		`provider "vendor" channel "openai-compat" (provider_compat) drops [strict_tools], per ` + vendorOrigin + " citing " + vendorVerifiedBy,
		"ask for a profile that allows lossy serving"} {
		if !strings.Contains(e.Message, s) {
			t.Errorf("message lacks %q: %s", s, e.Message)
		}
	}
	c := g.CandidatesOf(&g.Plans[0])[0]
	c.Translate = plan.TranslateOpenAIAnthropic
	if d := describe(g, &c, used); d.VerifiedAt != "" || d.VerifiedBy != translate.Claim(c.Translate) || d.Translate != c.Translate {
		t.Errorf("translated candidate described %+v", d)
	}
}

// TestRefusalsBoundWhatTheyRepeat: a client's long name is cut, and a long
// list of models ends with how many more there are.
func TestRefusalsBoundWhatTheyRepeat(t *testing.T) {
	long := strings.Repeat("m", 300)
	if got := Quote(long); got != `"`+strings.Repeat("m", maxQuoted)+`..."` {
		t.Errorf("Quote of 300 bytes: %s", got)
	}
	if got := Quote(`a"b`); got != `"a\"b"` {
		t.Errorf("Quote escapes: %s", got)
	}
	var many []string
	for i := range maxListed + 7 {
		many = append(many, fmt.Sprintf("m%02d", i))
	}
	e := NotListed(long, many)
	if e.Status != 404 || e.Code != dialect.CodeModelNotFound || e.Param != "model" ||
		!strings.Contains(e.Message, "m49, and 7 more") || strings.Contains(e.Message, "m50") {
		t.Errorf("refusal %+v", e)
	}
}
