package plan

import (
	"slices"
	"testing"
)

// rulesGraph has deployment-wide rules, one of them static, and profiles
// with rules of their own: "own" shares a code with the deployment's,
// "none" has no rules, and the third only static ones.
func rulesGraph(deployment []Rule) *Graph {
	return &Graph{Rules: deployment, Profiles: []Profile{
		{Name: "own", Rules: []Rule{
			{Name: "p-key", Code: "key_blocked", Expr: 10},
			{Name: "p-static", Code: "model_forbidden", Static: true, Expr: 11},
			{Name: "p-late", Code: "late", Expr: 12},
		}},
		{Name: "none"},
		{Name: "static-only", Rules: []Rule{{Name: "s", Code: "static_code", Static: true, Expr: 13}}},
	}}
}

var deploymentRules = []Rule{
	{Name: "d-static", Code: "geo", Static: true, Expr: 0},
	{Name: "d-key", Code: "key_blocked", Expr: 1},
}

func ruleNames(rules []RequestRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Name)
	}
	return out
}

func TestRequestRules(t *testing.T) {
	cases := []struct {
		name       string
		deployment []Rule
		profile    int
		want       []string
	}{
		{"deployment's first, then the profile's, static ones left out", deploymentRules, 0, []string{"d-key", "p-key", "p-late"}},
		{"a profile without rules gets the deployment's", deploymentRules, 1, []string{"d-key"}},
		{"static rules only: the deployment's request rules remain", deploymentRules, 2, []string{"d-key"}},
		{"no deployment rules: the profile's own", nil, 0, []string{"p-key", "p-late"}},
		{"nothing to evaluate per request is nil", nil, 2, nil},
		{"no rules at all is nil", nil, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := rulesGraph(c.deployment)
			got := g.RequestRules(c.profile)
			if !slices.Equal(ruleNames(got), c.want) || (c.want == nil) != (got == nil) {
				t.Fatalf("RequestRules = %q, want %q", ruleNames(got), c.want)
			}
			for _, r := range got {
				if r.Bit.Len() != 1 || g.ProfileRule(c.profile, r.Bit.First()).Name != r.Name {
					t.Errorf("rule %q has bit %b, which stands for another rule", r.Name, r.Bit)
				}
			}
		})
	}
}

func TestRuleByCode(t *testing.T) {
	cases := []struct {
		name       string
		deployment []Rule
		profile    int
		code       string
		want       string // the rule's name; "" for none
	}{
		{"a code both declare is the deployment's rule", deploymentRules, 0, "key_blocked", "d-key"},
		{"the profile's own code", deploymentRules, 0, "late", "p-late"},
		{"a static rule, behind a build-time skip", deploymentRules, 0, "model_forbidden", "p-static"},
		{"a static deployment rule", deploymentRules, 1, "geo", "d-static"},
		{"another profile's code is not this one's", deploymentRules, 1, "late", ""},
		{"without deployment rules the profile's own", nil, 0, "key_blocked", "p-key"},
		{"a gateway reason is no rule", deploymentRules, 0, "model_denied", ""},
		{"the empty code", deploymentRules, 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := rulesGraph(c.deployment).RuleByCode(c.profile, c.code)
			if ok != (c.want != "") || r.Name != c.want {
				t.Fatalf("RuleByCode = %+v, %v; want %q", r, ok, c.want)
			}
		})
	}
}

// TestRoutes: each route's dialect and path below /v1, and each
// translation's client route and the route its upstream is sent on.
func TestRoutes(t *testing.T) {
	for _, c := range []struct {
		route   Route
		dialect Dialect
		path    string
	}{
		{RouteChatCompletions, DialectOpenAI, "/chat/completions"},
		{RouteCompletions, DialectOpenAI, "/completions"},
		{RouteEmbeddings, DialectOpenAI, "/embeddings"},
		{RouteResponses, DialectOpenAI, "/responses"},
		{RouteMessages, DialectAnthropic, "/messages"},
		{"bogus", DialectOpenAI, ""},
	} {
		if d, p := c.route.Dialect(), c.route.UpstreamPath(); d != c.dialect || p != c.path {
			t.Errorf("%s: dialect %s path %q, want %s %q", c.route, d, p, c.dialect, c.path)
		}
	}
	for _, c := range []struct {
		name       string
		tr         Translation
		inbound    Route
		sentOn     Route // for a request arriving on inbound
		passesFrom Route // a route that stays as it is
	}{
		{"openai clients ride an anthropic channel on messages", TranslateOpenAIAnthropic, RouteChatCompletions, RouteMessages, ""},
		{"anthropic clients ride an openai channel on chat", TranslateAnthropicOpenAI, RouteMessages, RouteChatCompletions, ""},
		{"no translation serves no route and keeps each", TranslateNone, "", "", RouteResponses},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.tr.Inbound(); got != c.inbound {
				t.Errorf("Inbound = %q, want %q", got, c.inbound)
			}
			if c.inbound != "" {
				if got := c.tr.Upstream(c.inbound); got != c.sentOn {
					t.Errorf("Upstream(%s) = %q, want %q", c.inbound, got, c.sentOn)
				}
			}
			if c.passesFrom != "" {
				if got := c.tr.Upstream(c.passesFrom); got != c.passesFrom {
					t.Errorf("Upstream(%s) = %q, want it kept", c.passesFrom, got)
				}
			}
		})
	}
}

func TestSortEntries(t *testing.T) {
	es := []Entry{
		{Route: RouteResponses, Model: "a"}, {Route: RouteChatCompletions, Model: "z"},
		{Route: RouteMessages, Model: "b"}, {Route: RouteChatCompletions, Model: "a"}, {Route: RouteCompletions, Model: "m"},
	}
	SortEntries(es)
	want := []Entry{
		{Route: RouteChatCompletions, Model: "a"}, {Route: RouteChatCompletions, Model: "z"}, {Route: RouteCompletions, Model: "m"},
		{Route: RouteMessages, Model: "b"}, {Route: RouteResponses, Model: "a"},
	}
	if !slices.Equal(es, want) {
		t.Fatalf("sorted %v, want route then name: %v", es, want)
	}
}
