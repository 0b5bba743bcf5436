package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// presetCatalog imports presets.gemini with its base URL pointed at base
// and the probe's credential, supplying only what is the operator's.
func presetCatalog(base string) string {
	return `package pistra

import "pistra.dev/presets"

providers: gemini: presets.gemini & {
	base_url:       "` + base + `"
	credential_env: "` + testkit.ProbeCredentialEnv + `"
	models: "gemini-2.5-flash": {}
}
profiles: default: {}
keys: [{name: "probe", profile: "default", hash: "` + testkit.HashKey(testkit.ProbeKey) + `"}]
`
}

// TestProbePresetChannel: a channel imported from a preset is probed like
// any other, and the preset is never edited: its claim is read as the
// current one (a capability it claims and the endpoint drops is a
// regression against preset:gemini), the overlay goes beside the catalog
// and wins over the preset's claim with check -strict passing, the
// catalog file, the preset as pistrac ships it and the preset's source in
// the repository stay as they were, and the preset's source is refused
// as a place to write the overlay. The next run reads its claim from the
// overlay.
func TestProbePresetChannel(t *testing.T) {
	s, base := probeFake(t, fakeprovider.DialectOpenAI)
	s.SetDrops(fakeprovider.Drops(plan.Of(plan.CapAudioInput)))
	dir := t.TempDir()
	catalog := presetCatalog(base)
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	presetSource := filepath.Join(defaultPolicy, "presets", "gemini.cue")
	sourceBefore, err := os.ReadFile(presetSource)
	if err != nil {
		t.Fatal(err)
	}
	shippedBefore := pistrac(t, "", "presets", "gemini")
	shippedBefore.want(t, exitOK)

	refused := pistrac(t, "", "probe", "-yes", "-provider", "gemini", "-channel", "openai", "-o", presetSource, dir)
	refused.want(t, exitUsage)
	if !strings.Contains(refused.stderr, "was not written by pistrac probe") || s.Calls() != 0 {
		t.Errorf("%d calls, stderr %q: want the preset's source refused before any call", s.Calls(), refused.stderr)
	}

	args := []string{"probe", "-yes", "-provider", "gemini", "-channel", "openai", dir}
	r := pistrac(t, "", args...)
	r.want(t, exitFail)
	if !strings.Contains(r.stdout, "(origin preset:gemini, verified 2026-11-20") ||
		!strings.Contains(r.stderr, "regression: gemini/openai drops audio_input, which its claim preserves (origin preset:gemini") ||
		strings.Count(r.stderr, "regression") != 1 {
		t.Errorf("want the preset's claim read and audio_input its one regression\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"catalog.cue", "probe-gemini-openai.cue"}) {
		t.Errorf("policy directory holds %v, want the catalog and the overlay", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "catalog.cue")); string(b) != catalog {
		t.Errorf("the catalog was edited:\n%s", b)
	}
	if b, _ := os.ReadFile(presetSource); string(b) != string(sourceBefore) {
		t.Errorf("%s was edited", presetSource)
	}
	if shipped := pistrac(t, "", "presets", "gemini"); shipped.stdout != shippedBefore.stdout {
		t.Errorf("presets gemini changed:\n%s", shipped.stdout)
	}

	pistrac(t, "", "check", "-strict", dir).want(t, exitOK)
	report := pistrac(t, "", "catalog", dir)
	report.want(t, exitOK)
	if !strings.Contains(report.stdout, "gemini/openai: the claim of overlay:probe-gemini-openai (verified_at ") ||
		!strings.Contains(report.stdout, "\n  preset:gemini  2026-11-20 ") {
		t.Errorf("the catalog does not show the overlay winning over preset:gemini:\n%s", report.stdout)
	}
	again := pistrac(t, "", args...)
	again.want(t, exitOK)
	if !strings.Contains(again.stdout, "(origin overlay:probe-gemini-openai") {
		t.Errorf("the second run did not read the overlay's claim:\n%s", again.stdout)
	}
}
