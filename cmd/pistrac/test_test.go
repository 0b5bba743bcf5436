package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit/goldenfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// casesPolicy is a copy of the default policy whose tests/ holds the given
// case file.
func casesPolicy(t *testing.T, caseFile string) string {
	t.Helper()
	dir := copyPolicy(t)
	src, err := os.ReadFile(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "cases.cue"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTestDefaultPolicyPasses(t *testing.T) {
	r := pistrac(t, "", "test", defaultPolicy)
	r.want(t, exitOK)
	if !strings.HasPrefix(r.stdout, "ok: ") {
		t.Fatalf("stdout %q", r.stdout)
	}
}

// TestTestFailureReport pins what a failing case prints: its file:line,
// want against got, and the refusal's own message.
func TestTestFailureReport(t *testing.T) {
	dir := casesPolicy(t, filepath.Join("testdata", "failing_cases.cue"))
	r := pistrac(t, "", "test", dir)
	r.want(t, exitFail)
	goldenfile.Check(t, filepath.Join("testdata", "test_failing.golden"), []byte(strings.ReplaceAll(r.stdout, dir, "POLICYDIR")), *update)
}

// TestTestUpdate: -update rewrites the wants of failing cases so that the
// next run passes, asks them again to say so, and keeps the file valid CUE.
func TestTestUpdate(t *testing.T) {
	dir := casesPolicy(t, filepath.Join("testdata", "failing_cases.cue"))
	if r := pistrac(t, "", "test", "-update", dir); r.code != exitOK || !strings.Contains(r.stdout, "updated 4 of 4 failing cases\nok: ") {
		t.Fatalf("-update: status %d, want %d, and the cases asked again passing:\n%s", r.code, exitOK, r.stdout)
	}
	pistrac(t, "", "test", dir).want(t, exitOK)
	got, err := os.ReadFile(filepath.Join(dir, "tests", "cases.cue"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`want: serve: {provider: "fake-anthropic", channel: "openai-compat", model: "claude-sonnet-4-5"}`,
		`want: refuse: "fidelity_loss"`,
		`want: order: ["fake-openai/native gpt-4o-mini (translated anthropic_openai)", "fake-anthropic/native claude-haiku-4-5"]`,
		"// Cases that are wrong about the default policy",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("updated file lacks %s:\n%s", want, got)
		}
	}
}

func TestTestUsage(t *testing.T) {
	dir := copyPolicy(t)
	if r := pistrac(t, "", "test", dir); r.code != exitUsage || !strings.Contains(r.stderr, "reading the cases") {
		t.Errorf("no tests/: status %d, stderr %q", r.code, r.stderr)
	}
	bad := casesPolicy(t, filepath.Join("testdata", "failing_cases.cue"))
	if err := os.WriteFile(filepath.Join(bad, "tests", "typo.cue"), []byte("cases: x: {route: \"messages\", model: \"m\", wnat: refuse: \"a\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := pistrac(t, "", "test", bad); r.code != exitUsage || !strings.Contains(r.stderr, "typo.cue:1:") {
		t.Errorf("misspelt field: status %d, stderr %q", r.code, r.stderr)
	}
	both := casesPolicy(t, filepath.Join("testdata", "failing_cases.cue"))
	if err := os.WriteFile(filepath.Join(both, "tests", "both.cue"), []byte("cases: x: {key: \"dev\", route: \"messages\", model: \"m\", want: {refuse: \"a\", order: []}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := pistrac(t, "", "test", both); r.code != exitUsage || !strings.Contains(r.stderr, "both.cue:1: case \"x\": want needs serve and/or order, or refuse alone") {
		t.Errorf("refuse beside order: status %d, stderr %q", r.code, r.stderr)
	}
	broken := copyPolicy(t, `"gpt-4o": {}`, `"gpt-4o": {max_tokens: "x"}`)
	if r := pistrac(t, "", "test", broken); r.code != exitUsage {
		t.Errorf("policy that does not compile: status %d, want %d", r.code, exitUsage)
	}
}

// TestTestUpdateSharedWant: a want inherited from a hidden field is not
// rewritten (that would change the passing cases sharing it); -update says
// where to edit it, rewrites the case that states its own want, asks the
// cases again and fails.
func TestTestUpdateSharedWant(t *testing.T) {
	dir := casesPolicy(t, filepath.Join("testdata", "shared_want.cue"))
	path := filepath.Join(dir, "tests", "cases.cue")
	r := pistrac(t, "", "test", "-update", dir)
	r.want(t, exitFail)
	for _, want := range []string{
		`smart is not: want comes from _ref (cases.cue:6): edit by hand`,
		"updated 1 of 2 failing cases",
		"FAIL: 1 of 3 cases failed",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `_ref: _who & {want: serve: {provider: "fake-openai", channel: "native", model: "gpt-4o-mini"}}`) {
		t.Errorf("_ref was rewritten:\n%s", got)
	}
	r = pistrac(t, "", "test", dir)
	r.want(t, exitFail)
	if strings.Count(r.stdout, "FAIL  ") != 1 || !strings.Contains(r.stdout, "smart is not") {
		t.Errorf("after -update, want only the shared-want case failing:\n%s", r.stdout)
	}
}

// TestTestCaseValidation: what a case names is checked at load against the
// policy, every problem listed at its position with the likely name, and
// the run exits 2 without asking any case.
func TestTestCaseValidation(t *testing.T) {
	dir := casesPolicy(t, filepath.Join("testdata", "bad_cases.cue"))
	typo := "package tests\n\ncases: \"typo\": {key: \"dev\", rout: \"chat_completions\", model: \"fast\", want: refuse: \"no_candidate\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "tests", "typo.cue"), []byte(typo), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pistrac(t, "", "test", dir)
	r.want(t, exitUsage)
	cases, typoFile := filepath.Join(dir, "tests", "cases.cue"), filepath.Join(dir, "tests", "typo.cue")
	for _, want := range []string{
		typoFile + `:3:29: cases.typo.rout: field not allowed; did you mean "route"?`,
		cases + `:6:20: case "unknown names": no key is named "deb"; did you mean "dev"? (keys: dev, metered-dev)`,
		cases + `:6:32: case "unknown names": no route is named "chat_completion"; did you mean "chat_completions"?`,
		cases + `:6:80: case "unknown names": no capability is named "strict_tool"; did you mean "strict_tools"?`,
		cases + `:6:102: case "unknown names": "model_not_allowd" is not a code pistrad answers with; did you mean "model_not_allowed"?`,
		cases + `:7:34: case "key and profile": give a key or a profile, not both`,
		cases + `:7:110: case "key and profile": "fake-openai native gpt-4o-mini" is not a candidate: write "provider/channel model"`,
		cases + `:7:144: case "key and profile": no channel is named "fake-openai/nativ"; did you mean "fake-openai/native"?`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %s:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("a case was asked:\n%s", r.stdout)
	}
}

// TestTestKeyRequired: where access rules read the key, a case must name
// the key, as pistrad never decides for a profile without one.
func TestTestKeyRequired(t *testing.T) {
	dir := casesPolicy(t, filepath.Join("testdata", "failing_cases.cue"))
	rule := "package pistra\n\naccess_rules: [{name: \"metered-only-fast\", when: \"key == 'metered-dev' && model != 'fast'\", code: \"metered_fast_only\"}]\n"
	if err := os.WriteFile(filepath.Join(dir, "rules.cue"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pistrac(t, "", "test", dir)
	r.want(t, exitUsage)
	want := `case "wrong failover order": profile "default" has access rules that read the key ("metered-only-fast"), which pistrad never decides without one: name the key the case asks with instead (its keys: dev)`
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %s:\n%s", want, r.stderr)
	}
}

// TestTestPooledServe: a case served by a pool names the member set and
// the picker it is dialled through; one that does not is a failing case,
// and -update writes both in.
func TestTestPooledServe(t *testing.T) {
	const example = "../../policies/examples/self-hosted-pool"
	dir := t.TempDir()
	for _, f := range []string{"catalog.cue", "policy.cue"} {
		src, err := os.ReadFile(filepath.Join(example, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := "package tests\n\ncases: batch: {key: \"batch-runner\", route: \"completions\", model: \"llama\", " +
		"want: serve: {provider: \"vllm\", channel: \"native\", model: \"meta-llama/Llama-3.3-70B-Instruct\"}}\n"
	if err := os.WriteFile(filepath.Join(dir, "tests", "cases.cue"), []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	r := pistrac(t, "", "test", dir)
	r.want(t, exitFail)
	if !strings.Contains(r.stdout, "on a member of vllm-h100.inference.svc.cluster.local:8000, picked by vllm-epp.inference.svc.cluster.local:9002") {
		t.Errorf("the report does not name the member set:\n%s", r.stdout)
	}
	pistrac(t, "", "test", "-update", dir).want(t, exitOK)
	got, err := os.ReadFile(filepath.Join(dir, "tests", "cases.cue"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `members: "vllm-h100.inference.svc.cluster.local:8000", picker: "vllm-epp.inference.svc.cluster.local:9002"`) {
		t.Errorf("updated to %s", got)
	}
}
