package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/compiler/explain"
	"github.com/pistra/pistra/runtime/catalog"
	"github.com/pistra/pistra/runtime/plan"
)

func TestExplain(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		out  []string // regexps stdout (or stderr, on failure) must match
	}{
		{"failover order", []string{"-profile", "default", "-route", "chat_completions", "-model", "fast"}, exitOK,
			[]string{`(?m)^\s+0\s+fake-openai/native\s+primary\s+native\s.*gpt-4o-mini`, `(?m)^\s+serves\s+#0\s+fake-openai/native`}},
		{"key stands for its profile", []string{"-key", "dev", "-route", "chat_completions", "-model", "fast"}, exitOK,
			[]string{`(?m)^profile:\s+default \(key dev\)$`}},
		{"compat passed over for strict tools", []string{"-profile", "default", "-route", "chat_completions", "-model", "fast", "-caps", "strict_tools"}, exitOK,
			[]string{`(?m)^\s+serves\s+#0\s+fake-openai/native\s`,
				`(?m)^\s+passed over\s+#\d+\s+fake-anthropic/openai-compat\s.*would lose strict_tools; claim: https://platform.claude.com/`}},
		{"refusal names the loss and its source", []string{"-profile", "default", "-route", "chat_completions", "-model", "smart", "-caps", "strict_tools"}, exitOK,
			[]string{`(?m)^\s+rejected: every candidate`,
				`(?m)^\s+refused\s+#0\s+fake-anthropic/openai-compat\s.*would lose strict_tools; claim: https://platform.claude.com/`}},
		{"metered skips what hides usage", []string{"-profile", "metered", "-route", "chat_completions", "-model", "fast"}, exitOK,
			[]string{`(?m)^\s+fake-anthropic/openai-compat\s+-\s+\S+\s+fidelity_loss\s+usage_details$`}},
		{"unknown model", []string{"-profile", "default", "-route", "chat_completions", "-model", "gpt-5"}, exitFail,
			[]string{`model "gpt-5" is not in the catalog .*fast`}},
		{"unknown profile", []string{"-profile", "ops", "-route", "chat_completions", "-model", "fast"}, exitFail,
			[]string{`unknown profile "ops" \(profiles: default, metered\)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Flags after the directory work too.
			args := append([]string{"explain", defaultPolicy}, c.args...)
			r := pistrac(t, "", args...)
			r.want(t, c.code)
			text := r.stdout
			if c.code != exitOK {
				text = r.stderr
			}
			for _, p := range c.out {
				if !regexp.MustCompile(p).MatchString(text) {
					t.Errorf("output does not match %s:\n%s", p, text)
				}
			}
		})
	}
}

// A bundle read back answers exactly as the policy it was built from.
func TestBundleAnswersLikeThePolicy(t *testing.T) {
	bundle := filepath.Join(buildDefault(t), "bundle.json")
	query := []string{"-profile", "default", "-route", "chat_completions", "-model", "smart", "-caps", "strict_tools,multi_choice"}
	fromDir := pistrac(t, "", append([]string{"explain", defaultPolicy}, query...)...)
	fromBundle := pistrac(t, "", append([]string{"explain", "-bundle", bundle}, query...)...)
	fromDir.want(t, exitOK)
	fromBundle.want(t, exitOK)
	if fromDir.stdout != fromBundle.stdout {
		t.Errorf("explain differs:\npolicy:\n%s\nbundle:\n%s", fromDir.stdout, fromBundle.stdout)
	}
	r := pistrac(t, "", "diff", defaultPolicy, bundle)
	r.want(t, exitOK)
	if r.stdout != "plans: no change\nsettings: no change\n" {
		t.Errorf("diff of a policy and its own bundle:\n%s", r.stdout)
	}
}

func TestDiff(t *testing.T) {
	// The compat channel starts keeping usage details: the metered profile
	// may now use it.
	dir := copyPolicy(t, `preserves: []`, `preserves: ["usage_details"]`)
	r := pistrac(t, "", "diff", defaultPolicy, dir)
	r.want(t, exitFail)
	at := regexp.QuoteMeta(filepath.Join(dir, "catalog.cue")) + ":" + strconv.Itoa(lineOf(t, filepath.Join(dir, "catalog.cue"), "preserves:")) + `:\d+`
	for _, p := range []string{
		`(?m)^plans: \d+ changed`,
		// The plan change, where the policy makes it, over every plan it
		// applies to (metered's among them).
		`(?m)^\+ candidate fake-anthropic/openai-compat\n    at \S+/catalog.cue:\d+:\d+\n    in \d+ plans:\n(      .*\n)*      metered chat_completions smart\n`,
		`(?m)^~ candidate fake-anthropic/openai-compat: preserves: none -> usage_details\n    at ` + at + `\n    in \d+ plans:\n(      .*\n)*      default chat_completions smart\n`,
		`(?m)^\s+~ fake-anthropic/openai-compat: preserves: none -> usage_details\n\s+at ` + at + `$`,
	} {
		if !regexp.MustCompile(p).MatchString(r.stdout) {
			t.Errorf("diff does not match %s:\n%s", p, r.stdout)
		}
	}
	pistrac(t, "", "diff", defaultPolicy, "no/such/policy").want(t, exitUsage)
}

// lineOf is the 1-based line of the first line of file containing s.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, s)
	return 0
}

// TestDiffSettingsAreChanges: a change no plan shows (a budget's limit, a
// key moved to another profile, which changes what it may reach) is a
// change: exit 1, with where the policy makes it.
func TestDiffSettingsAreChanges(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`limit: 2000000`, `limit: 3000000`, "~ team-daily: limit: 2000000 -> 3000000"},
		{`name: "dev", profile: "default"`, `name: "dev", profile: "metered"`, "~ dev: profile: default -> metered"},
	} {
		dir := copyPolicy(t, tc.from, tc.to)
		r := pistrac(t, "", "diff", defaultPolicy, dir)
		r.want(t, exitFail)
		at := filepath.Join(dir, "policy.cue") + ":" + strconv.Itoa(lineOf(t, filepath.Join(dir, "policy.cue"), tc.to)) + ":"
		if !strings.Contains(r.stdout, tc.want+"\n      at "+at) {
			t.Errorf("%s: want %q at %s:\n%s", tc.to, tc.want, at, r.stdout)
		}
	}
}

func TestCatalogJSON(t *testing.T) {
	r := pistrac(t, "", "catalog", "-format", "json", defaultPolicy)
	r.want(t, exitOK)
	var rep explain.CatalogReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	found := false
	for _, row := range rep.Channels {
		if row.Provider == "fake-anthropic" && row.Channel == "openai-compat" {
			found = true
			if row.Preserves != 0 || row.VerifiedAt != "2026-11-20" || row.AgeDays == nil {
				t.Errorf("compat row = %+v", row)
			}
		}
	}
	if !found {
		t.Errorf("no row for the compat channel:\n%s", r.stdout)
	}
	// The models table of the text form is in the JSON too.
	emb := slices.IndexFunc(rep.Models, func(m explain.ModelRoutes) bool { return m.Model == "text-embedding-3-small" })
	if emb < 0 || !slices.Equal(rep.Models[emb].Routes, []plan.Route{plan.RouteEmbeddings}) {
		t.Errorf("models = %+v, want text-embedding-3-small on embeddings alone", rep.Models)
	}
}

// TestCaps: pistrac caps prints the reference the schema carries, one
// paragraph per capability.
func TestCaps(t *testing.T) {
	r := pistrac(t, "", "caps")
	r.want(t, exitOK)
	for _, name := range plan.CapNames() {
		if !strings.Contains(r.stdout, "\n"+name+": ") && !strings.HasPrefix(r.stdout, name+": ") {
			t.Errorf("caps does not document %s:\n%s", name, r.stdout)
		}
	}
}

// withOverlay is the default policy with an overlay claiming for its
// compat channel, in probe.cue.
func withOverlay(t *testing.T) string {
	dir := copyPolicy(t)
	overlay := `package pistra

overlays: "probe-compat": claims: "fake-anthropic": "openai-compat": {
	preserves: ["multi_choice"]
	verified_at: "2026-12-10"
	verified_by: "probe"
}
`
	if err := os.WriteFile(filepath.Join(dir, "probe.cue"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDiffPlacesAnOverlay: a claim an overlay changes is placed in the
// overlay, where the change was made, not at the claim it replaced.
func TestDiffPlacesAnOverlay(t *testing.T) {
	dir := withOverlay(t)
	r := pistrac(t, "", "diff", defaultPolicy, dir)
	r.want(t, exitFail)
	probe := regexp.QuoteMeta(filepath.Join(dir, "probe.cue"))
	for _, want := range []string{
		`~ fake-anthropic/openai-compat: preserves: none -> multi_choice\n      at ` + probe + `:4:`,
		`~ fake-anthropic/openai-compat: origin: catalog.cue -> overlay:probe-compat\n      at ` + probe + `:3:`,
		`~ fake-anthropic/openai-compat: verified_at: 2026-11-20 -> 2026-12-10\n      at ` + probe + `:5:`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("diff lacks %s:\n%s", want, r.stdout)
		}
	}
}

// TestCatalogOverlay: an overlay's claim wins over the catalog file's, and
// the report says whose claim won, how old it is and what it overrode.
func TestCatalogOverlay(t *testing.T) {
	dir := withOverlay(t)
	var out bytes.Buffer
	c := &cli{stdout: &out, stderr: &out, now: func() time.Time { return time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC) }}
	if code := c.dispatch([]string{"catalog", "-format", "json", dir}); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	var rep explain.CatalogReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	i := slices.IndexFunc(rep.Channels, func(r catalog.Row) bool {
		return r.Provider == "fake-anthropic" && r.Channel == "openai-compat" && r.Translation == plan.TranslateNone
	})
	if i < 0 {
		t.Fatalf("no row for the compat channel:\n%s", out.String())
	}
	row := rep.Channels[i]
	if row.Origin != "overlay:probe-compat" || row.Preserves != plan.Of(plan.CapMultiChoice) || row.AgeDays == nil || *row.AgeDays != 10 {
		t.Errorf("winning claim = %+v", row)
	}
	if len(row.Overrode) != 1 || row.Overrode[0].Origin != "catalog.cue" || row.Overrode[0].VerifiedAt != "2026-11-20" ||
		row.Overrode[0].AgeDays == nil || *row.Overrode[0].AgeDays != 30 {
		t.Errorf("overrode = %+v, want the catalog's own claim of 2026-11-20, 30 days old", row.Overrode)
	}
}

// TestCheckStaleClaim: a claim verified longer ago than claim_max_age_days
// is a warning that -strict refuses, counted on the command's clock.
func TestCheckStaleClaim(t *testing.T) {
	dir := copyPolicy(t, `on_fidelity_loss: "reject"`, "on_fidelity_loss: \"reject\"\nclaim_max_age_days: 20")
	check := func(day time.Time, args ...string) (int, string) {
		var out bytes.Buffer
		c := &cli{stdout: &out, stderr: &out, now: func() time.Time { return day }}
		return c.dispatch(append([]string{"check"}, append(args, dir)...)), out.String()
	}
	if code, out := check(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), "-strict"); code != exitOK {
		t.Fatalf("15 days after the claim: exit %d:\n%s", code, out)
	}
	code, out := check(time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC), "-strict")
	if code != exitFail || !strings.Contains(out, `the claim on provider "fake-anthropic" channel "openai-compat" (catalog.cue) was verified on 2026-11-20, more than claim_max_age_days (20) ago`) {
		t.Errorf("30 days after the claim, -strict: exit %d:\n%s", code, out)
	}
}
