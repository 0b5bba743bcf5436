package route

import (
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/plan"
)

// TestStrictSchemaLoweringIsALoss: an OpenAI client's strict tool whose
// schema Anthropic's strict mode cannot take whole (integer bounds) loses
// strict_tools on the openai→anthropic candidate, for that request only:
// refused where lossy serving is, served lossy and named so where it is
// allowed. A strict tool of portable keywords, or bounds on a tool that is
// not strict, keeps everything.
func TestStrictSchemaLoweringIsALoss(t *testing.T) {
	b := testkit.NewGraph("sha256:lowering")
	an := b.Provider(plan.Provider{Name: "an", BaseURL: "http://an.test/v1", Pool: -1, Auth: "x-api-key", Channels: []plan.Channel{{
		Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative, Routes: []plan.Route{plan.RouteMessages},
		Preserves: plan.AllCaps, Origin: "native"}}})
	claude := plan.Candidate{Provider: an, Tier: plan.TierTranslation, Model: "claude-upstream", Translate: plan.TranslateOpenAIAnthropic,
		Preserves: plan.AllCaps &^ plan.TranslationLosses[plan.TranslateOpenAIAnthropic], Origin: "translation:openai_anthropic", Primary: true}
	table := b.Table(plan.Entry{Route: plan.RouteChatCompletions, Model: "claude",
		Plan: b.Plan(plan.Plan{Listed: true}, []plan.Candidate{claude}, nil)})
	b.Profile(plan.Profile{Name: "default", Table: table})
	b.Profile(plan.Profile{Name: "lenient", Table: table, OnFidelityLoss: plan.LossAllow})
	g := b.Build()

	tool := func(strict, schema string) []byte {
		return []byte(`{"model":"claude","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":` +
			`{"name":"pick","strict":` + strict + `,"parameters":` + schema + `}}]}`)
	}
	bounded := `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":5}},"required":["n"],"additionalProperties":false}`
	portable := `{"type":"object","properties":{"u":{"type":"string","enum":["c","f"]}},"required":["u"],"additionalProperties":false}`
	decide := func(profile int, body []byte) (Decision, bool) {
		var r caps.Reader
		r.Reset(plan.RouteChatCompletions, body)
		d, e := Decide(g, Query{Profile: profile, Route: plan.RouteChatCompletions, Model: "claude"}, &r, nil, nil)
		return d, e == nil
	}
	strict := plan.Of(plan.CapStrictTools)
	if d, ok := decide(0, tool("true", bounded)); ok || d.Used != strict {
		t.Errorf("bounded strict tool under reject: served=%v, used %v; want refused", ok, d.Used)
	}
	d, ok := decide(1, tool("true", bounded))
	if !ok || !d.Selection.Lossy || d.Candidates[0].Preserves.Has(plan.CapStrictTools) {
		t.Errorf("bounded strict tool under allow: served=%v lossy=%v preserves %v; want served lossy without strict_tools",
			ok, d.Selection.Lossy, d.Candidates[0].Preserves)
	}
	if c := describe(g, &d.Candidates[d.Selection.Attempt[0]], d.Used); c.Lost != strict {
		t.Errorf("the served candidate reads %+v; want it named as losing strict_tools", c)
	}
	if g.CandidatesOf(d.Plan)[0].Preserves != claude.Preserves {
		t.Error("the loss of one request changed the graph's candidate")
	}
	for _, body := range [][]byte{tool("true", portable), tool("false", bounded)} {
		if d, ok := decide(0, body); !ok || d.Selection.Lossy {
			t.Errorf("%s: served=%v lossy=%v; want served whole", body, ok, d.Selection.Lossy)
		}
	}
}
