package expr

import (
	"encoding/base64"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

func mustCost(t testing.TB, src string) plan.Expr {
	t.Helper()
	e, err := CompileCost(src)
	if err != nil {
		t.Fatalf("CompileCost(%q): %s", src, err.Msg)
	}
	return e
}

func mustRule(t testing.TB, src string) plan.Expr {
	t.Helper()
	e, _, err := CompileRule(src)
	if err != nil {
		t.Fatalf("CompileRule(%q): %s", src, err.Msg)
	}
	return e
}

func mustLoad(t testing.TB, exprs ...plan.Expr) *Programs {
	t.Helper()
	p, err := Load(exprs)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func TestCostRoundTrip(t *testing.T) {
	gpt4o := Served{Model: "gpt-4o", Backend: "openai"}
	usage := meter.Usage{
		InputTokens: 1000, CachedInputTokens: 300, CacheCreationInputTokens: 7,
		OutputTokens: 50, TotalTokens: 1050, ReasoningTokens: 20,
	}
	claude := Served{Model: "claude-sonnet-4", Backend: "openai"}
	for _, tc := range []struct {
		name, src string
		s         Served
		u         meter.Usage
		want      uint64
	}{
		{"seed, weighted model", seedCost, gpt4o, usage, 1000 + 50*4},
		{"seed, other model", seedCost, claude, usage, 1000 + 50},
		{"every uint variable", `input_tokens + cached_input_tokens * 10u + cache_creation_input_tokens * 100u +
			output_tokens * 1000u + total_tokens * 10000u + reasoning_tokens * 100000u`,
			gpt4o, usage, 1000 + 3000 + 700 + 50000 + 10500000 + 2000000},
		{"backend", `backend == "openai" ? 1u : 2u`, gpt4o, usage, 1},
		{"int", `int(output_tokens) - 8`, gpt4o, usage, 42},
		{"negative int clamps", `int(output_tokens) - int(input_tokens)`, gpt4o, usage, 0},
		{"double truncates", `double(output_tokens) * 1.25`, gpt4o, usage, 62},
		{"NaN clamps", `double(reasoning_tokens - reasoning_tokens) / 0.0 * 0.0`, gpt4o, usage, 0},
		{"negative double clamps", `-double(input_tokens)`, gpt4o, usage, 0},
		{"huge double saturates", `double(input_tokens) * 1e30`, gpt4o, usage, math.MaxUint64},
		{"zero usage", seedCost, gpt4o, meter.Usage{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustLoad(t, mustCost(t, tc.src))
			got, err := p.Cost(0, tc.s, tc.u)
			if err != nil {
				t.Fatalf("Cost: %v", err)
			}
			if got != tc.want {
				t.Errorf("Cost = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCostOverflowIsAnError(t *testing.T) {
	p := mustLoad(t, mustCost(t, `input_tokens * output_tokens`))
	_, err := p.Cost(0, Served{}, meter.Usage{InputTokens: math.MaxUint64, OutputTokens: 2})
	if err == nil || !strings.Contains(err.Error(), "cel[0]") {
		t.Errorf("Cost on overflow: %v, want an error naming cel[0]", err)
	}
}

func TestRuleEval(t *testing.T) {
	p := mustLoad(t,
		mustRule(t, `route == "messages" && key.startsWith("batch-")`),
		mustRule(t, `model != upstream_model && provider == "azure" && channel == "native" && profile == "eval"`),
	)
	for _, tc := range []struct {
		rule int
		a    Attrs
		want bool
	}{
		{0, Attrs{Route: "messages", Key: "batch-7"}, true},
		{0, Attrs{Route: "messages", Key: "web"}, false},
		{0, Attrs{Route: "responses", Key: "batch-7"}, false},
		{1, Attrs{Model: "fast", UpstreamModel: "gpt-4o-mini", Provider: "azure", Channel: "native", Profile: "eval"}, true},
		{1, Attrs{Model: "gpt-4o", UpstreamModel: "gpt-4o", Provider: "azure", Channel: "native", Profile: "eval"}, false},
	} {
		got, err := p.Rule(tc.rule, tc.a)
		if err != nil {
			t.Errorf("Rule(%d, %+v): %v", tc.rule, tc.a, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Rule(%d, %+v) = %v, want %v", tc.rule, tc.a, got, tc.want)
		}
	}
}

func TestProgramsRefuseWrongUse(t *testing.T) {
	p := mustLoad(t, mustCost(t, `total_tokens`), mustRule(t, `key == "x"`))
	if _, err := p.Cost(1, Served{}, meter.Usage{}); err == nil || !strings.Contains(err.Error(), "not cost") {
		t.Errorf("Cost on a rule: %v", err)
	}
	if _, err := p.Rule(0, Attrs{}); err == nil || !strings.Contains(err.Error(), "not rule") {
		t.Errorf("Rule on a cost expression: %v", err)
	}
	if _, err := p.Cost(2, Served{}, meter.Usage{}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Cost out of range: %v", err)
	}
}

func TestLoadRefuses(t *testing.T) {
	cost := mustCost(t, `total_tokens`)
	rule := mustRule(t, `key == "x"`)
	encode := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	for _, tc := range []struct {
		name string
		e    plan.Expr
		want string
	}{
		{"bad base64", plan.Expr{Kind: KindCost, Checked: "not base64!"}, "not valid base64"},
		{"bad proto", plan.Expr{Kind: KindCost, Checked: encode([]byte{0xff, 0xff, 0xff})}, "does not decode"},
		{"empty", plan.Expr{Kind: KindCost, Checked: ""}, "holds no expression"},
		{"unknown kind", plan.Expr{Kind: "price", Checked: cost.Checked}, `unknown expression kind "price"`},
		{"rule labelled cost", plan.Expr{Kind: KindCost, Checked: rule.Checked}, "produces bool, not a number"},
		{"cost labelled rule", plan.Expr{Kind: KindRule, Checked: cost.Checked}, "produces uint, not a bool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]plan.Expr{cost, tc.e})
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if !strings.Contains(err.Error(), "cel[1]") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %q, want it to name cel[1] and say %q", err, tc.want)
			}
		})
	}
}

// TestActivationsMatchDeclarations keeps activation.go and env.go in step:
// every declared variable resolves and nothing else does.
func TestActivationsMatchDeclarations(t *testing.T) {
	for _, tc := range []struct {
		env *environment
		act interface{ ResolveName(string) (any, bool) }
	}{
		{costEnv, &usageActivation{}},
		{ruleEnv, &attrsActivation{}},
	} {
		for _, v := range tc.env.vars {
			if _, ok := tc.act.ResolveName(v.name); !ok {
				t.Errorf("%s: declared variable %q does not resolve", tc.env.kind, v.name)
			}
		}
		if _, ok := tc.act.ResolveName("undeclared"); ok {
			t.Errorf("%s: an undeclared name resolves", tc.env.kind)
		}
	}
}

// TestConcurrentEval shares one Programs between goroutines, as pistrad
// does, so the race detector sees the pooled activations.
func TestConcurrentEval(t *testing.T) {
	p := mustLoad(t, mustCost(t, seedCost))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				in := uint64(g*1000 + i)
				got, err := p.Cost(0, Served{Model: "gpt-4.1"}, meter.Usage{InputTokens: in, OutputTokens: 1})
				if err != nil || got != in+4 {
					t.Errorf("Cost = %d, %v; want %d", got, err, in+4)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkCost(b *testing.B) {
	p := mustLoad(b, mustCost(b, seedCost))
	s := Served{Model: "gpt-4o", Backend: "openai"}
	u := meter.Usage{InputTokens: 1200, OutputTokens: 300, TotalTokens: 1500}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Cost(0, s, u); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRule(b *testing.B) {
	p := mustLoad(b, mustRule(b, `route == "messages" && key.startsWith("batch-")`))
	a := Attrs{Route: "messages", Key: "batch-7", Model: "fast"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Rule(0, a); err != nil {
			b.Fatal(err)
		}
	}
}
