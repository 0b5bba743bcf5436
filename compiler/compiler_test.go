package compiler

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// writePolicy writes files into a fresh policy directory.
func writePolicy(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustCompile(t *testing.T, dir string) *plan.Graph {
	t.Helper()
	g, err := Compile(dir)
	if err != nil {
		t.Fatalf("compile %s:\n%v", dir, err)
	}
	return g
}

func TestCompileIsDeterministic(t *testing.T) {
	dirs := []string{filepath.Join("..", "policies")}
	examples, _ := filepath.Glob(filepath.Join("..", "policies", "examples", "*", "*.cue"))
	for _, f := range examples {
		if d := filepath.Dir(f); dirs[len(dirs)-1] != d {
			dirs = append(dirs, d)
		}
	}
	for _, dir := range dirs {
		first := testkit.MarshalJSON(t, mustCompile(t, dir))
		for i := 0; i < 3; i++ {
			if again := testkit.MarshalJSON(t, mustCompile(t, dir)); !bytes.Equal(first, again) {
				t.Fatalf("%s: compile %d differs from the first", dir, i+2)
			}
		}
		// Where the directory is named from must not matter either.
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		if other := testkit.MarshalJSON(t, mustCompile(t, abs)); !bytes.Equal(first, other) {
			t.Fatalf("%s: compiling it by its absolute path changes the graph", dir)
		}
	}
}

const testCatalog = `
providers: openai: {
	base_url: "https://api.openai.com/v1"
	models: {"gpt-4o": {}, "gpt-4o-mini": {}}
	channels: native: {dialect: "openai", tier: "native"}
}
keys: []
`

func TestIdenticalEnvelopesShareATable(t *testing.T) {
	dir := writePolicy(t, map[string]string{
		"catalog.cue": testCatalog,
		"profiles.cue": `profiles: {
			a: {}
			b: {on_fidelity_loss: "allow"} // not part of the table
			c: {allowed_models: ["gpt-4o-mini"]}
		}`,
	})
	g := mustCompile(t, dir)
	tables := map[string]int{}
	for _, p := range g.Profiles {
		tables[p.Name] = p.Table
	}
	if tables["a"] != tables["b"] {
		t.Errorf("profiles a and b plan the same envelope but use tables %d and %d", tables["a"], tables["b"])
	}
	if tables["a"] == tables["c"] {
		t.Errorf("profile c narrows the models but shares table %d with a", tables["a"])
	}
	if len(g.Tables) != 2 {
		t.Errorf("got %d tables, want 2", len(g.Tables))
	}
	// c's plans for gpt-4o-mini are a's plans: stored once.
	pa, _ := g.Lookup(0, plan.RouteChatCompletions, "gpt-4o-mini")
	pc, _ := g.Lookup(2, plan.RouteChatCompletions, "gpt-4o-mini")
	if pa != pc {
		t.Errorf("the same plan is stored twice")
	}
	if _, ok := g.Lookup(2, plan.RouteChatCompletions, "gpt-4o"); ok {
		t.Errorf("profile c has a plan for a model it may not use")
	}
}

func TestErrorsAreRelativeToTheDirectoryAsGiven(t *testing.T) {
	dir := writePolicy(t, map[string]string{
		"catalog.cue":  testCatalog,
		"profiles.cue": "profiles: eval: require_caps: [\"telepathy\"]\n",
	})
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, given := range []string{dir, rel} {
		_, err := Compile(given)
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 {
			t.Fatalf("want one policy error, got %v", err)
		}
		want := filepath.Join(given, "profiles.cue") + `:1:32: profiles.eval.require_caps[0]: unknown capability "telepathy"`
		if got := errs.Error(); !strings.HasPrefix(got, want) {
			t.Errorf("got  %s\nwant %s (...)", got, want)
		}
	}
}

// Secrets put in the wrong place are refused without being repeated, since
// build output ends up in CI logs.
func TestRefusalsDoNotEchoSecrets(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	dir := writePolicy(t, map[string]string{
		"catalog.cue": `
providers: openai: {
	base_url: "https://user:` + secret + `@api.openai.com/v1"
	credential_env: "` + secret + `"
	headers: Authorization: "Bearer ` + secret + `"
	models: "gpt-4o": {}
	channels: native: {dialect: "openai", tier: "native"}
}`,
		"policy.cue": `profiles: default: {}
keys: [{name: "ci", profile: "default", hash: "` + secret + `"}]`,
	})
	_, err := Compile(dir)
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 4 {
		t.Fatalf("want four refusals, got:\n%v", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("a refusal repeats the secret:\n%v", err)
	}
}

func TestInStringPositions(t *testing.T) {
	dir := writePolicy(t, map[string]string{
		"catalog.cue": testCatalog,
		"policy.cue": `profiles: default: {}
budgets: [
	{name: "plain", limit: 1, window: "day", cost: {type: "CEL", cel: "input_tokens + nope"}},
	{name: "escaped", limit: 1, window: "day", cost: {type: "CEL", cel: "model == \"x\" ? input_tokens : nope"}},
	{name: "raw", limit: 1, window: "day", cost: {type: "CEL", cel: #"model == "x" ? input_tokens : nope"#}},
]`,
	})
	_, err := Compile(dir)
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("want three errors, got:\n%v", err)
	}
	want := []Pos{
		{File: filepath.Join(dir, "policy.cue"), Line: 3, Col: 84},
		// An escape precedes the offset: the string's own position.
		{File: filepath.Join(dir, "policy.cue"), Line: 4, Col: 70},
		{File: filepath.Join(dir, "policy.cue"), Line: 5, Col: 98},
	}
	for i, e := range errs {
		if e.Pos != want[i] {
			t.Errorf("error %d at %v, want %v (%s)", i, e.Pos, want[i], e.Msg)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	errs := Errors{
		{Pos: Pos{File: "b.cue", Line: 2, Col: 1}, Path: "keys[1].name", Msg: `duplicate key name "ci"`, Also: []Pos{{File: "b.cue", Line: 1, Col: 9}}},
		{Pos: Pos{File: "a.cue", Line: 9, Col: 3}, Msg: "expected operand"},
		{Pos: Pos{File: "a.cue", Line: 9, Col: 3}, Msg: "expected operand"},
		{Pos: Pos{File: "dir"}, Msg: "no .cue files in the policy directory"},
	}.sort()
	want := "a.cue:9:3: expected operand\n" +
		"b.cue:2:1: keys[1].name: duplicate key name \"ci\"\n    b.cue:1:9\n" +
		"dir: no .cue files in the policy directory"
	if got := errs.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestEmptyDirectory(t *testing.T) {
	_, err := Compile(t.TempDir())
	var errs Errors
	if !errors.As(err, &errs) || !strings.Contains(err.Error(), "no .cue files") {
		t.Fatalf("got %v", err)
	}
}

// TestBareWordInExpression: a bare word inside an expression is not read
// as a string, so nothing else is checked, and the output says so last.
func TestBareWordInExpression(t *testing.T) {
	dir := writePolicy(t, map[string]string{"p.cue": `on_fidelity_loss: reject | "allow"
providers: a: {base_url: "https://api.openai.com/v1", models: m: {}, channels: n: {dialect: "openai", tier: "native"}}
profiles: p: require_caps: ["usage_detail"]
keys: []
`})
	_, err := Compile(dir)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Compile = %v, want Errors", err)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Msg, `reference "reject" not found`) || errs[1].Msg != notChecked {
		t.Fatalf("errors:\n%v\nwant the reference, then %q", err, notChecked)
	}
}
