package explain

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

func explain(t *testing.T, q Query) string {
	t.Helper()
	var b strings.Builder
	if err := Plan(&b, bundletest.DefaultPolicy(), q); err != nil {
		t.Fatalf("Plan(%+v): %v", q, err)
	}
	return b.String()
}

func TestPlanGolden(t *testing.T) {
	cases := []struct {
		name string
		q    Query
	}{
		{"explain_failover", Query{Profile: "default", Route: plan.RouteChatCompletions, Model: "fast"}},
		{"explain_passed_over", Query{Key: "dev", Route: plan.RouteChatCompletions, Model: "smart",
			Caps: plan.Of(plan.CapStrictTools)}},
		{"explain_rejected", Query{Profile: "default", Route: plan.RouteChatCompletions, Model: "smart",
			Caps: plan.Of(plan.CapStrictTools, plan.CapMultiChoice)}},
		{"explain_skips", Query{Key: "meter", Route: plan.RouteChatCompletions, Model: "smart"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { golden(t, c.name, explain(t, c.q)) })
	}
}

// selectionLines returns the lines of the selection block.
func selectionLines(out string) []string {
	_, block, _ := strings.Cut(out, "\nselection for ")
	return strings.Split(strings.TrimSpace(block), "\n")[1:]
}

func TestPlanSelection(t *testing.T) {
	strictMulti := plan.Of(plan.CapStrictTools, plan.CapMultiChoice)
	cases := []struct {
		name    string
		q       Query
		pattern []string // one regexp per selection line, in order
	}{
		{"no caps keeps plan order",
			Query{Profile: "default", Route: plan.RouteChatCompletions, Model: "fast"},
			[]string{`^\s+serves\s+#0\s+fake-openai/native\s`, `^\s+then\s+#1\s+fake-anthropic/openai-compat\s`, `^\s+then\s+#2\s+fake-anthropic/native\s`}},
		{"compat passed over for translation",
			Query{Profile: "default", Route: plan.RouteChatCompletions, Model: "smart", Caps: plan.Of(plan.CapStrictTools)},
			[]string{`^\s+serves\s+#1\s+fake-anthropic/native\s+translation\s`,
				`^\s+passed over\s+#0\s+fake-anthropic/openai-compat\s.*would lose strict_tools; claim: ` + regexp.QuoteMeta(bundletest.CompatDocs)}},
		{"reject names every loss and its source",
			Query{Profile: "default", Route: plan.RouteChatCompletions, Model: "smart", Caps: strictMulti},
			[]string{`^\s+rejected: every candidate`,
				`^\s+refused\s+#0\s.*would lose strict_tools,multi_choice; claim: ` + regexp.QuoteMeta(bundletest.CompatDocs),
				`^\s+refused\s+#1\s.*would lose multi_choice; claim: translation openai_anthropic`}},
		{"allow forwards on the fewest losses",
			Query{Profile: "lenient", Route: plan.RouteChatCompletions, Model: "smart", Caps: strictMulti},
			[]string{`^\s+forwarded with loss`, `^\s+serves\s+#1\s.*losing multi_choice$`, `^\s+then\s+#0\s.*losing strict_tools,multi_choice$`}},
		{"a plan that cannot lose is not read for capabilities",
			Query{Profile: "default", Route: plan.RouteMessages, Model: "claude-haiku-4-5", Caps: plan.Of(plan.CapStrictTools)},
			[]string{`^\s+the body would not be read for capabilities`, `^\s+serves\s+#0\s+fake-anthropic/native\s`}},
		{"no candidates",
			Query{Profile: "metered", Route: plan.RouteChatCompletions, Model: "smart", Caps: strictMulti},
			[]string{`^\s+nothing to select`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := selectionLines(explain(t, c.q))
			if len(lines) != len(c.pattern) {
				t.Fatalf("selection has %d lines, want %d:\n%s", len(lines), len(c.pattern), strings.Join(lines, "\n"))
			}
			for i, p := range c.pattern {
				if !regexp.MustCompile(p).MatchString(lines[i]) {
					t.Errorf("line %d %q does not match %q", i, lines[i], p)
				}
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	cases := []struct {
		name string
		q    Query
		want []string
	}{
		{"both profile and key", Query{Profile: "default", Key: "dev", Route: plan.RouteChatCompletions, Model: "fast"},
			[]string{"not both"}},
		{"neither", Query{Route: plan.RouteChatCompletions, Model: "fast"},
			[]string{"no profile or key", "default, lenient, metered, narrow"}},
		{"unknown profile", Query{Profile: "nope", Route: plan.RouteChatCompletions, Model: "fast"},
			[]string{`unknown profile "nope"`, "default, lenient, metered, narrow"}},
		{"unknown key", Query{Key: "nope", Route: plan.RouteChatCompletions, Model: "fast"},
			[]string{`unknown key "nope"`, "dev, meter"}},
		{"unknown route", Query{Profile: "default", Route: "chat", Model: "fast"},
			[]string{`unknown route "chat"`, "chat_completions, completions, embeddings, responses, messages"}},
		{"no route", Query{Profile: "default", Model: "fast"},
			[]string{"no route given", "chat_completions, completions"}},
		{"no model", Query{Profile: "default", Route: plan.RouteChatCompletions},
			[]string{"no model given", "fast, smart"}},
		{"not in catalog", Query{Profile: "default", Route: plan.RouteChatCompletions, Model: "gpt-5"},
			[]string{`"gpt-5" is not in the catalog`, `names profile "default" may use on chat_completions: fast, smart`}},
		{"not on this route for the profile", Query{Profile: "default", Route: plan.RouteChatCompletions, Model: "claude-haiku-4-5"},
			[]string{`not served on route chat_completions for profile "default"`, "it is on: messages"}},
		{"not allowed", Query{Profile: "narrow", Route: plan.RouteChatCompletions, Model: "fast"},
			[]string{`"fast" is not allowed for profile "narrow"`, "allowed_models: gpt-4o", "may use on chat_completions: gpt-4o"}},
		{"not served anywhere on the route", Query{Profile: "default", Route: plan.RouteEmbeddings, Model: "gpt-4o"},
			[]string{`not served on route embeddings by any channel`, "may use on embeddings: none"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			err := Plan(&b, bundletest.DefaultPolicy(), c.q)
			if err == nil {
				t.Fatalf("no error; output:\n%s", b.String())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if b.Len() != 0 {
				t.Errorf("printed output along with the error:\n%s", b.String())
			}
		})
	}
}
