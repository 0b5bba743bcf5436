package route

import (
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
)

// Provenance of the compat channel's claim in testGraph.
const (
	vendorOrigin     = testkit.VendorOrigin
	vendorVerifiedBy = testkit.VendorVerifiedBy
)

// Profiles of testGraph, by index.
const (
	profDefault = iota
	profLenient
	profNarrow
	profRuled
)

// testGraph serves, on chat: "tools" from a compat channel of "vendor"
// (keeping structured output only) with a native channel of "oa" behind
// it, "compat" from the compat channel alone, and "gpt" natively; on
// messages "claude" natively, with a skipped translation. "empty" is a plan
// the build left no candidate. Profile "default" rejects lossy serving,
// "lenient" allows it, "narrow" may use only "gpt", and "ruled" has access
// rules that read the key: the deployment-wide one blocks the key named
// "blocked", its own keep vendor for keys named partner-*, and one fails
// to evaluate for the key named "weird".
func testGraph(t testing.TB) *plan.Graph {
	t.Helper()
	b := testkit.NewGraph("sha256:route")
	compat, native := b.CompatAndNative(plan.RouteChatCompletions, plan.RouteEmbeddings)
	vendor, oa := compat.Provider, native.Provider
	an := b.Provider(plan.Provider{Name: "an", BaseURL: "http://an.test/v1", Pool: -1, Auth: "x-api-key", Channels: []plan.Channel{{
		Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative, Routes: []plan.Route{plan.RouteMessages},
		Preserves: plan.AllCaps, Origin: "native"}}})
	claude := plan.Candidate{Provider: an, Tier: plan.TierNative, Model: "claude-upstream", Preserves: plan.AllCaps, Origin: "native", Primary: true}
	translated := plan.Skip{Provider: oa, Channel: 0, Model: "gpt-4o", Reason: "fidelity_loss", Missing: plan.Of(plan.CapStrictTools),
		Translate: plan.TranslateAnthropicOpenAI}
	tools := plan.Entry{Route: plan.RouteChatCompletions, Model: "tools", Plan: b.Plan(plan.Plan{Listed: true}, []plan.Candidate{compat, native}, nil)}
	gpt := plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt", Plan: b.Plan(plan.Plan{Listed: true, NativeOnly: true}, []plan.Candidate{native}, nil)}
	all := b.Table(tools, gpt,
		plan.Entry{Route: plan.RouteChatCompletions, Model: "compat", Plan: b.Plan(plan.Plan{Listed: true}, []plan.Candidate{compat}, nil)},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "empty", Plan: b.Plan(plan.Plan{},
			nil, []plan.Skip{{Provider: vendor, Channel: -1, Reason: "model_denied"}})},
		plan.Entry{Route: plan.RouteMessages, Model: "claude", Plan: b.Plan(plan.Plan{Listed: true, NativeOnly: true},
			[]plan.Candidate{claude}, []plan.Skip{translated})})
	b.Profile(plan.Profile{Name: "default", Table: all})
	b.Profile(plan.Profile{Name: "lenient", Table: all, OnFidelityLoss: plan.LossAllow})
	b.Profile(plan.Profile{Name: "narrow", Table: b.Table(gpt)})
	b.Profile(plan.Profile{Name: "ruled", Table: all, Rules: []plan.Rule{
		rule(t, &b.Graph, "vendor-for-partners", "vendor_partners_only", "", `provider == "vendor" && !key.startsWith("partner-")`),
		rule(t, &b.Graph, "weird-keys", "weird_key", "", `key == "weird" && int(model) > 0`),
	}})
	b.Rules = []plan.Rule{rule(t, &b.Graph, "blocked-key", "key_blocked", "this key is blocked", `key == "blocked"`)}
	return b.Build()
}

// rule compiles an access rule denying when src holds into g's CEL.
func rule(t testing.TB, g *plan.Graph, name, code, message, src string) plan.Rule {
	t.Helper()
	e, static, err := expr.CompileRule(src)
	if err != nil {
		t.Fatalf("rule %s: %v", name, err)
	}
	g.CEL = append(g.CEL, e)
	return plan.Rule{Name: name, Code: code, Message: message, Expr: len(g.CEL) - 1, Static: static}
}
