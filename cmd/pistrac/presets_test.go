package main

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/policies/presets"
)

// TestPresets: the list names every embedded preset with its summary, and
// a preset prints as the CUE an import brings, claims included.
func TestPresets(t *testing.T) {
	r := pistrac(t, "", "presets")
	r.want(t, exitOK)
	for _, name := range presets.Names() {
		if !strings.Contains(r.stdout, "presets."+name+" ") {
			t.Errorf("the list lacks presets.%s:\n%s", name, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "presets.gemini            Gemini through its OpenAI-compatible endpoint, the only way pistra reaches Gemini\n") {
		t.Errorf("gemini's summary:\n%s", r.stdout)
	}
	for _, arg := range []string{"gemini", "presets.gemini"} {
		one := pistrac(t, "", "presets", arg)
		one.want(t, exitOK)
		if !strings.Contains(one.stdout, "\npackage presets\n") || !strings.Contains(one.stdout, `verified_by: "https://ai.google.dev/gemini-api/docs/openai"`) {
			t.Errorf("presets %s:\n%s", arg, one.stdout)
		}
	}
	bad := pistrac(t, "", "presets", "gemni")
	bad.want(t, exitUsage)
	if !strings.Contains(bad.stderr, `no preset "gemni" (presets: anthropic, anthropic_compat, azure, gemini, openai, vllm)`) {
		t.Errorf("stderr %q", bad.stderr)
	}
}
