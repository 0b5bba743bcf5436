package route

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// TestAnswer: a preflight answer says what the decision says (every skip,
// and that the body went unread once the key's rules left only a native
// candidate) and what the attempt loop's checks add, and serves the first
// attempt.
func TestAnswer(t *testing.T) {
	g := testGraph(t)
	rules, err := LoadRules(g, profRuled, "someone")
	if err != nil {
		t.Fatal(err)
	}
	strict := plan.Of(plan.CapStrictTools)
	d, e := Decide(g, Query{Profile: profRuled, Route: plan.RouteChatCompletions, Model: "tools"}, Fixed(strict), rules, nil)
	if e != nil {
		t.Fatal(e)
	}
	a := NewAnswer(g, "someone", &d)
	if a.Finish() {
		t.Fatalf("an answer with no attempt serves %+v", a.Serve)
	}
	c := &d.Candidates[d.Selection.Attempt[0]]
	a.PassOver(g, c, "circuit_open", 1500*time.Millisecond)
	a.Attempt(g, c, d.Used)
	if !a.Finish() {
		t.Fatal("an answer with an attempt serves nothing")
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var v testkit.Preflight
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Performed || v.Note != preflightNote || v.Route != "chat_completions" || v.Profile != "ruled" || v.Key != "someone" ||
		v.OnFidelityLoss != "reject" || v.Capabilities.Read || len(v.Capabilities.Used) != 0 || v.Lossy ||
		v.Serve.Provider != "oa" || len(v.AttemptOrder) != 1 || len(v.PassedOver) != 0 {
		t.Errorf("answer %s", b)
	}
	if got := v.SkipReasons(); got != "vendor/openai-compat:vendor_partners_only[] oa/native:circuit_open[]" {
		t.Errorf("skips %q", got)
	}
	if a.Skipped[1].RetryAfterMS != 1500 || a.Skipped[0].Model != "vendor-large" {
		t.Errorf("skips %+v", a.Skipped)
	}
}

// TestAnswerNamesWhatSelectionPassedOver: a candidate set aside for a
// lossless one is named with what it would drop, and a build skip keeps
// its translation and what it misses.
func TestAnswerNamesWhatSelectionPassedOver(t *testing.T) {
	g := testGraph(t)
	strict := plan.Of(plan.CapStrictTools)
	d, e := Decide(g, Query{Profile: profDefault, Route: plan.RouteChatCompletions, Model: "tools"}, Fixed(strict), nil, nil)
	if e != nil {
		t.Fatal(e)
	}
	a := NewAnswer(g, "", &d)
	if len(a.PassedOver) != 1 || a.PassedOver[0].Provider != "vendor" || a.PassedOver[0].Lost != strict || a.PassedOver[0].Origin != vendorOrigin {
		t.Errorf("passed over %+v", a.PassedOver)
	}
	d, _ = Decide(g, Query{Profile: profDefault, Route: plan.RouteMessages, Model: "claude"}, Fixed(0), nil, nil)
	a = NewAnswer(g, "", &d)
	want := Skipped{Provider: "oa", Channel: "native", Model: "gpt-4o", Reason: "fidelity_loss", Missing: strict, Translate: plan.TranslateAnthropicOpenAI}
	if len(a.Skipped) != 1 || a.Skipped[0] != want || a.Capabilities.Read || a.Key != "" {
		t.Errorf("answer %+v, want skip %+v", a, want)
	}
}
