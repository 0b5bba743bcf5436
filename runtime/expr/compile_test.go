package expr

import (
	"strings"
	"testing"
)

// seedCost is the per-model weighting example budgets are documented with.
const seedCost = `model.startsWith("gpt-4") ? input_tokens + output_tokens * uint(4) : input_tokens + output_tokens`

func TestCompileCostAccepts(t *testing.T) {
	for _, src := range []string{
		`total_tokens`,
		`input_tokens + output_tokens * 3u`,
		seedCost,
		`int(output_tokens) - int(cached_input_tokens)`,
		`double(input_tokens) * 0.5 + double(output_tokens) * 1.5`,
		`backend == "anthropic" ? cache_creation_input_tokens + reasoning_tokens : 0u`,
		"input_tokens +\n  output_tokens",
	} {
		e, err := CompileCost(src)
		if err != nil {
			t.Errorf("CompileCost(%q): %s (offset %d)", src, err.Msg, err.Offset)
			continue
		}
		if e.Kind != KindCost || e.Source != src || e.Checked == "" {
			t.Errorf("CompileCost(%q) = %+v", src, e)
		}
	}
}

func TestCompileCostRefuses(t *testing.T) {
	declared := "backend, cache_creation_input_tokens, cached_input_tokens, input_tokens, model, " +
		"output_tokens, reasoning_tokens, total_tokens"
	for _, tc := range []struct {
		name, src string
		msg       string // exact, or a prefix when it ends in "..."
		offset    int
	}{
		{"bool", `input_tokens > 10u`, "cost expression must produce a number, got bool", 0},
		{"string", `  model`, "cost expression must produce a number, got string", 2},
		{"route", `route == "responses" ? 2u : 1u`, `"route" is not available in a cost expression: ...`, 0},
		{"route as receiver", `1u + uint(route.size())`, `"route" is not available in a cost expression: ...`, 10},
		{"unknown variable", `input_tokens + prompt_tokens`,
			`undeclared variable "prompt_tokens" (declared: ` + declared + `)`, 15},
		{"unknown variable on line 2", "input_tokens\n+ foo", `undeclared variable "foo" ...`, 15},
		{"unknown function", `price(model)`, `unknown function "price"`, 5},
		{"uint plus int", `input_tokens + 4`, `"+" cannot be applied to (uint, int); uint and int do not mix...`, 13},
		{"syntax end", `input_tokens +`, "syntax error: unexpected end of expression", 14},
		{"syntax token", `input_tokens + * 2u`, "syntax error: unexpected '*'", 15},
		// The offset is in bytes: é is two of them.
		{"syntax after utf-8", `"é" + )`, "syntax error: unexpected ')'", 7},
		{"too expensive", `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20].exists(a,
			[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20].exists(b,
			[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20].exists(c, model.contains(backend)))) ? 1u : 0u`,
			"cost expression is too expensive to evaluate per request ...", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileCost(tc.src)
			if err == nil {
				t.Fatalf("CompileCost(%q) succeeded, want an error", tc.src)
			}
			checkError(t, err, tc.msg, tc.offset)
		})
	}
}

// checkError compares an error with an exact message, or with a prefix when
// want ends in "...".
func checkError(t *testing.T, err *Error, want string, offset int) {
	t.Helper()
	if prefix, ok := strings.CutSuffix(want, "..."); ok {
		if !strings.HasPrefix(err.Msg, prefix) {
			t.Errorf("message %q, want prefix %q", err.Msg, prefix)
		}
	} else if err.Msg != want {
		t.Errorf("message %q, want %q", err.Msg, want)
	}
	if strings.Contains(err.Msg, "\n") {
		t.Errorf("message spans lines: %q", err.Msg)
	}
	if err.Offset != offset {
		t.Errorf("offset %d, want %d", err.Offset, offset)
	}
}

func TestCompileRule(t *testing.T) {
	for _, tc := range []struct {
		src    string
		static bool
	}{
		{`route == "embeddings"`, true},
		{`model.startsWith("gpt-4") && provider != "openai"`, true},
		{`channel == "compat" || upstream_model == profile`, true},
		{`key == "ci-runner"`, false},
		{`route == "messages" && key.startsWith("batch-")`, false},
		// A comprehension variable named key is counted as a read of key:
		// the rule is left to request time, which is the safe direction.
		{`["a", "b"].exists(key, key == model)`, false},
	} {
		e, static, err := CompileRule(tc.src)
		if err != nil {
			t.Errorf("CompileRule(%q): %s", tc.src, err.Msg)
			continue
		}
		if e.Kind != KindRule || e.Checked == "" {
			t.Errorf("CompileRule(%q) = %+v", tc.src, e)
		}
		if static != tc.static {
			t.Errorf("CompileRule(%q) static = %v, want %v", tc.src, static, tc.static)
		}
	}
}

func TestCompileRuleRefuses(t *testing.T) {
	declared := "channel, key, method, model, profile, provider, route, service, upstream_model"
	for _, tc := range []struct {
		src, msg string
		offset   int
	}{
		{`upstream_model`, "access rule condition must produce a bool, got string", 0},
		{`input_tokens > 0u`, `undeclared variable "input_tokens" (declared: ` + declared + `)`, 0},
		{`route ==`, "syntax error: unexpected end of expression", 8},
	} {
		_, _, err := CompileRule(tc.src)
		if err == nil {
			t.Errorf("CompileRule(%q) succeeded, want an error", tc.src)
			continue
		}
		checkError(t, err, tc.msg, tc.offset)
	}
}

func TestCompileDeterministic(t *testing.T) {
	for _, src := range []string{seedCost, `[1u, 2u].map(x, x * input_tokens)[1] + total_tokens`} {
		a, errA := CompileCost(src)
		b, errB := CompileCost(src)
		if errA != nil || errB != nil {
			t.Fatalf("CompileCost(%q): %v, %v", src, errA, errB)
		}
		if a.Checked != b.Checked {
			t.Errorf("CompileCost(%q) gave different bytes on a second run", src)
		}
	}
	src := `{"a": 1, "b": 2}[route] == 1 && key in ["x", "y"]`
	a, _, errA := CompileRule(src)
	b, _, errB := CompileRule(src)
	if errA != nil || errB != nil {
		t.Fatalf("CompileRule(%q): %v, %v", src, errA, errB)
	}
	if a.Checked != b.Checked {
		t.Errorf("CompileRule(%q) gave different bytes on a second run", src)
	}
}
