package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

const probeSecret = "sk-probe-upstream"

// probeFake serves a fake upstream of dialect expecting the probe's
// credential, which it sets in the environment.
func probeFake(t *testing.T, dialect fakeprovider.Dialect) (*fakeprovider.Server, string) {
	t.Helper()
	t.Setenv(testkit.ProbeCredentialEnv, probeSecret)
	return fakeprovider.Start(t, fakeprovider.Options{Dialect: dialect, Key: probeSecret})
}

func probePolicyDir(t *testing.T, p testkit.Policy) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), p.Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// probeRun runs pistrac probe -yes on vendor/compat of dir, the overlay
// going to out, and returns the result with the claim the overlay holds
// (the zero claim when none was written).
func probeRun(t *testing.T, dir, out string, code int) (result, testkit.OverlayClaim) {
	t.Helper()
	r := pistrac(t, "", "probe", "-provider", "vendor", "-channel", "compat", "-yes", "-o", out, dir)
	r.want(t, code)
	src, err := os.ReadFile(out)
	if err != nil {
		return r, testkit.OverlayClaim{}
	}
	return r, testkit.ParseOverlay(t, src)["probe-vendor-compat"]["vendor"]["compat"]
}

// probedCaps are the capabilities the probe can ask for in each dialect.
var probedCaps = map[fakeprovider.Dialect]plan.CapSet{
	fakeprovider.DialectOpenAI:    plan.AllCaps,
	fakeprovider.DialectAnthropic: plan.AllCaps &^ plan.Of(plan.CapAudioInput, plan.CapMultiChoice),
}

// TestProbeEachDropInTurn: against a fake that drops nothing, then each
// capability in turn, the overlay written holds exactly what the fake
// honours, dated today and verified by the probe, with evidence for every
// capability probed. A fake that drops usage_details hides its cache reads
// with them (no count of cached tokens is left to read), so prompt_caching
// cannot be seen either: the probe writes only what it saw.
func TestProbeEachDropInTurn(t *testing.T) {
	for _, dialect := range []fakeprovider.Dialect{fakeprovider.DialectOpenAI, fakeprovider.DialectAnthropic} {
		s, base := probeFake(t, dialect)
		dir := probePolicyDir(t, testkit.ProbePolicy(string(dialect), base))
		probed := probedCaps[dialect]
		for _, drop := range append([]plan.CapSet{0}, capSets(probed.Caps())...) {
			t.Run(string(dialect)+"/drop"+drop.String(), func(t *testing.T) {
				s.SetDrops(fakeprovider.Drops(drop))
				want := probed &^ drop
				if drop.Has(plan.CapUsageDetails) {
					want &^= plan.Of(plan.CapPromptCaching)
				}
				r, claim := probeRun(t, dir, filepath.Join(t.TempDir(), "overlay.cue"), exitOK)
				if !slices.Equal(claim.Preserves, want.Names()) {
					t.Errorf("preserves %v, want %v\n%s", claim.Preserves, want.Names(), r.stdout)
				}
				if today := time.Now().UTC().Format(time.DateOnly); claim.VerifiedAt != today || claim.VerifiedBy != "probe" {
					t.Errorf("verified %q by %q, want today by the probe", claim.VerifiedAt, claim.VerifiedBy)
				}
				for _, c := range plan.AllCaps.Caps() {
					if _, ok := claim.Evidence[c.String()]; ok != probed.Has(c) {
						t.Errorf("evidence for %s: %v, want it exactly for what was probed", c, ok)
					}
				}
			})
		}
	}
}

func capSets(caps []plan.Cap) []plan.CapSet {
	out := make([]plan.CapSet, len(caps))
	for i, c := range caps {
		out[i] = plan.Of(c)
	}
	return out
}

// TestProbeRegression: the overlay a first run wrote into the policy
// directory compiles with it and becomes the channel's claim; once the
// fake stops honouring one capability of it, the second run reads that
// claim and exits 1 naming that capability, and only that one:
// multi_choice was never claimed, so its loss is no regression.
func TestProbeRegression(t *testing.T) {
	s, base := probeFake(t, fakeprovider.DialectOpenAI)
	s.SetDrops(fakeprovider.Drops(plan.Of(plan.CapMultiChoice)))
	dir := probePolicyDir(t, testkit.ProbePolicy("openai", base))
	out := filepath.Join(dir, "probe-vendor-compat.cue")
	_, first := probeRun(t, dir, out, exitOK)
	pistrac(t, "", "check", "-strict", dir).want(t, exitOK)

	s.SetDrops(fakeprovider.Drops(plan.Of(plan.CapMultiChoice, plan.CapStrictTools)))
	r, second := probeRun(t, dir, out, exitFail)
	if !strings.Contains(r.stderr, "regression: vendor/compat drops strict_tools") || strings.Count(r.stderr, "regression") != 1 {
		t.Errorf("stderr %q: want the one regression, strict_tools", r.stderr)
	}
	if !strings.Contains(r.stderr, "(origin overlay:probe-vendor-compat, verified "+first.VerifiedAt+", by probe)") {
		t.Errorf("stderr %q: want the claim's provenance", r.stderr)
	}
	if slices.Contains(second.Preserves, "strict_tools") || len(second.Preserves) != len(first.Preserves)-1 {
		t.Errorf("second overlay preserves %v after %v: want strict_tools gone", second.Preserves, first.Preserves)
	}
}

// TestProbeAsksFirst: the plan (every call, its route and token estimate,
// and the totals) is printed before any call; declining sends nothing and
// writes nothing, and a yes makes exactly the calls printed.
func TestProbeAsksFirst(t *testing.T) {
	s, base := probeFake(t, fakeprovider.DialectOpenAI)
	dir := probePolicyDir(t, testkit.ProbePolicy("openai", base))
	args := []string{"probe", "-provider", "vendor", "-channel", "compat", dir}
	for _, answer := range []string{"", "n\n", "maybe\n"} {
		r := pistrac(t, answer, args...)
		r.want(t, exitUsage)
		if s.Calls() != 0 || !strings.Contains(r.stderr, "nothing sent") {
			t.Errorf("answer %q: %d calls, stderr %q: want none sent", answer, s.Calls(), r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("policy directory holds %d files after declining, want the catalog alone", len(entries))
	}
	r := pistrac(t, "y\n", args...)
	r.want(t, exitOK)
	for _, want := range []string{"9 calls, about ", "input tokens and at most 528 output tokens", "baseline", "prompt_caching (repeat)",
		"route responses", "responses", "current claim: preserves [] (origin catalog.cue", "credential from $" + testkit.ProbeCredentialEnv} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, probeSecret) {
		t.Error("the credential was printed")
	}
	if s.Calls() != 9 {
		t.Errorf("%d calls, want the 9 printed", s.Calls())
	}
	if _, err := os.Stat(filepath.Join(dir, "probe-vendor-compat.cue")); err != nil {
		t.Errorf("no overlay in the policy directory: %v", err)
	}
}

// TestProbeRefusals: what the probe will not do, each before any call.
func TestProbeRefusals(t *testing.T) {
	s, base := probeFake(t, fakeprovider.DialectOpenAI)
	dir := probePolicyDir(t, testkit.ProbePolicy("openai", base))
	foreign := filepath.Join(t.TempDir(), "mine.cue")
	if err := os.WriteFile(foreign, []byte("package pistra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no channel named", []string{"-provider", "vendor", dir}, "-provider and -channel are required"},
		{"unknown channel", []string{"-provider", "vendor", "-channel", "native", dir}, `provider "vendor" has no channel "native"`},
		{"a bundle without -o", []string{"-provider", "vendor", "-channel", "compat", "-bundle", "b.json"}, "say where the overlay goes"},
		{"a file it did not write", []string{"-provider", "vendor", "-channel", "compat", "-o", foreign, dir}, "was not written by pistrac probe"},
		{"a missing directory", []string{"-provider", "vendor", "-channel", "compat", "-o", filepath.Join(dir, "no", "o.cue"), dir}, "no directory to write the overlay in"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := pistrac(t, "", append([]string{"probe", "-yes"}, tt.args...)...)
			r.want(t, exitUsage)
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q, want %q", r.stderr, tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(foreign); string(b) != "package pistra\n" || s.Calls() != 0 {
		t.Errorf("%d calls, foreign file now %q", s.Calls(), b)
	}
}

// TestProbeOutageWritesNothing: an endpoint that is down shows nothing
// about its capabilities, so no claim is written and the exit says so.
func TestProbeOutageWritesNothing(t *testing.T) {
	s, base := probeFake(t, fakeprovider.DialectOpenAI)
	if err := s.SetFaults(fakeprovider.Faults{FailStatus: 503}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "overlay.cue")
	r, _ := probeRun(t, probePolicyDir(t, testkit.ProbePolicy("openai", base)), out, exitUsage)
	if !strings.Contains(r.stderr, "could not be probed now; nothing written") {
		t.Errorf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an overlay was written")
	}
}

// TestProbeFromBundle: the compiled catalog may come as bundle.json, with
// the overlay going where -o says, in the package of the CUE files there.
func TestProbeFromBundle(t *testing.T) {
	_, base := probeFake(t, fakeprovider.DialectAnthropic)
	built := t.TempDir()
	pistrac(t, "", "build", "-o", built, probePolicyDir(t, testkit.ProbePolicy("anthropic", base, "extended_thinking"))).want(t, exitOK)
	outDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(outDir, "catalog.cue"), []byte("package deployment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(outDir, "probe.cue")
	r := pistrac(t, "", "probe", "-yes", "-provider", "vendor", "-channel", "compat", "-o", out, "-bundle", filepath.Join(built, "bundle.json"))
	r.want(t, exitOK)
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	claim := testkit.ParseOverlay(t, src)["probe-vendor-compat"]["vendor"]["compat"]
	if !strings.Contains(string(src), "package deployment\n") || !slices.Equal(claim.Preserves, probedCaps[fakeprovider.DialectAnthropic].Names()) {
		t.Errorf("overlay:\n%s", src)
	}
	if !strings.Contains(r.stdout, "current claim: preserves [extended_thinking]") || !strings.Contains(r.stdout, "not probed: the dialect has no way to ask for it") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}
