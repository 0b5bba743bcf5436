package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// defaultPolicy is the repository's default policy.
const defaultPolicy = "../../policies"

type result struct {
	stdout, stderr string
	code           int
}

// pistrac runs the CLI in process with stdin as its input.
func pistrac(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return result{out.String(), errOut.String(), code}
}

func (r result) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// copyPolicy copies the default policy into a temporary directory,
// applying string replacements to policy.cue and catalog.cue.
func copyPolicy(t *testing.T, replace ...string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(defaultPolicy)
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(replace...)
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".cue" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(defaultPolicy, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		edited := r.Replace(string(src))
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestUsage(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no command", nil, exitUsage, "", "Exit status:"},
		{"help", []string{"-h"}, exitOK, "Exit status:", ""},
		{"unknown command", []string{"compile"}, exitUsage, "", `unknown command "compile"`},
		{"command help", []string{"explain", "-h"}, exitOK, "", "usage: pistrac explain"},
		{"unknown flag", []string{"check", "-x", defaultPolicy}, exitUsage, "", "flag provided but not defined"},
		{"missing argument", []string{"check"}, exitUsage, "", "usage: pistrac check [-strict] POLICYDIR"},
		{"build without -o", []string{"build", defaultPolicy}, exitUsage, "", "-o DIR is required"},
		{"not a directory", []string{"check", "no/such/dir"}, exitUsage, "", "no/such/dir is not a policy directory"},
		{"unknown capability", []string{"explain", "-profile", "default", "-route", "chat_completions", "-model", "fast",
			"-caps", "telepathy", defaultPolicy}, exitUsage, "", `unknown capability "telepathy" (known: strict_tools,`},
		{"directory and bundle", []string{"catalog", "-bundle", "x.json", defaultPolicy}, exitUsage, "", "either a policy directory or -bundle"},
		{"catalog format", []string{"catalog", "-format", "yaml", defaultPolicy}, exitUsage, "", `unknown format "yaml"`},
		{"diff one side", []string{"diff", defaultPolicy}, exitUsage, "", "usage: pistrac diff A B"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := pistrac(t, "", c.args...)
			r.want(t, c.code)
			if !strings.Contains(r.stdout, c.stdout) || !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stdout %q does not contain %q or stderr %q does not contain %q", r.stdout, c.stdout, r.stderr, c.stderr)
			}
		})
	}
}

func TestHashKey(t *testing.T) {
	r := pistrac(t, "  sk-pistra-dev\n", "hash-key")
	r.want(t, exitOK)
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}\n$`).MatchString(r.stdout) {
		t.Fatalf("output %q is not sha256:<hex>", r.stdout)
	}
	// The default policy's dev key is documented as sk-pistra-dev.
	policy, err := os.ReadFile(filepath.Join(defaultPolicy, "policy.cue"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(policy), `hash: "`+strings.TrimSpace(r.stdout)+`"`) {
		t.Errorf("%s is not the dev key's hash in the default policy", strings.TrimSpace(r.stdout))
	}
	pistrac(t, " \n", "hash-key").want(t, exitUsage)
	pistrac(t, strings.Repeat("k", maxKeyLen+1), "hash-key").want(t, exitUsage)
}

func TestCheck(t *testing.T) {
	r := pistrac(t, "", "check", defaultPolicy)
	r.want(t, exitOK)
	if !regexp.MustCompile(`^ok: \d+ plans \(\d+ distinct\) for 2 profiles\n$`).MatchString(r.stdout) || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

func TestCheckWarnings(t *testing.T) {
	dir := copyPolicy(t, `verified_at: "2026-11-20"`, `verified_at: "2999-01-01"`)
	r := pistrac(t, "", "check", dir)
	r.want(t, exitOK)
	if !regexp.MustCompile(`^ok: \d+ plans \(\d+ distinct\) for 2 profiles, 1 warning\n$`).MatchString(r.stdout) {
		t.Errorf("stdout %q", r.stdout)
	}
	if !regexp.MustCompile(`^\S+catalog\.cue:\d+:\d+: warning: providers\."fake-anthropic"\.channels\."openai-compat"\.verified_at: verified_at 2999-01-01 is in the future`).MatchString(r.stderr) {
		t.Errorf("stderr %q", r.stderr)
	}
	strict := pistrac(t, "", "check", "-strict", dir)
	strict.want(t, exitFail)
	if strict.stdout != "" || !strings.Contains(strict.stderr, "warning: ") || !strings.HasSuffix(strict.stderr, "pistrac check: 1 warning, refused under -strict\n") {
		t.Errorf("-strict: stdout %q, stderr %q", strict.stdout, strict.stderr)
	}
	// build prints them too, and still writes.
	b := pistrac(t, "", "build", "-o", t.TempDir(), dir)
	b.want(t, exitOK)
	if !strings.Contains(b.stderr, "warning: ") {
		t.Errorf("build does not print the warning: %q", b.stderr)
	}
	pistrac(t, "", "check", "-strict", defaultPolicy).want(t, exitOK)
}

func TestCheckListsEveryError(t *testing.T) {
	dir := copyPolicy(t,
		`require_caps: ["usage_details"]`, `require_caps: ["telepathy"]`,
		`profile: "default"`, `profile: "nobody"`)
	r := pistrac(t, "", "check", dir)
	r.want(t, exitFail)
	if r.stdout != "" {
		t.Errorf("stdout on failure: %q", r.stdout)
	}
	var problems []string
	for _, line := range strings.Split(strings.TrimRight(r.stderr, "\n"), "\n") {
		if !strings.HasPrefix(line, " ") { // indented lines are further positions
			problems = append(problems, line)
		}
	}
	if len(problems) < 2 {
		t.Fatalf("want both problems listed, got:\n%s", r.stderr)
	}
	for _, p := range problems {
		if !regexp.MustCompile(`^\S+\.cue:\d+:\d+: `).MatchString(p) {
			t.Errorf("problem does not start with file:line:col: %q", p)
		}
	}
	for _, w := range []string{"telepathy", "nobody"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("errors do not mention %q:\n%s", w, r.stderr)
		}
	}
}

func TestCatalogClock(t *testing.T) {
	var out bytes.Buffer
	c := &cli{stdout: &out, stderr: &out, now: func() time.Time { return time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC) }}
	if code := c.dispatch([]string{"catalog", defaultPolicy}); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	// The default policy's compat claim is dated 2026-11-20.
	if !regexp.MustCompile(`(?m)^fake-anthropic\s+openai-compat\s.*\s2026-11-20\s+30d\s+https://`).MatchString(out.String()) {
		t.Errorf("catalog does not age the compat claim 30 days:\n%s", out.String())
	}
}
