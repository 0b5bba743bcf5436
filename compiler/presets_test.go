package compiler

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/policies/presets"
	"github.com/pistra/pistra/runtime/plan"
)

// presetUse is what an operator adds to a preset for it to compile beside
// the models: the base URL or the pool, where the preset cannot know it.
var presetUse = map[string]struct{ provider, policy string }{
	"azure": {provider: `base_url: "https://contoso.openai.azure.com/openai/deployments/gpt-4o"`},
	"vllm":  {provider: `pool: "gpus"`, policy: `pools: gpus: dns: "vllm.internal:8000"`},
}

// TestPresetsCompile imports every preset the way an operator does and
// holds each to what a preset promises: it compiles with nothing but the
// operator's own values, every claim in it is dated and cites a page of
// its provider's documentation, and its claims' origin names the preset.
func TestPresetsCompile(t *testing.T) {
	names := presets.Names()
	if len(names) < 6 {
		t.Fatalf("presets %v, want at least openai, anthropic, anthropic_compat, gemini, azure and vllm", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dir := writePolicy(t, map[string]string{"policy.cue": fmt.Sprintf(`package pistra

import "pistra.dev/presets"

%s
providers: p: presets.%s & {
	models: m: {}
	%s
}
profiles: default: {}
keys: []
`, presetUse[name].policy, name, presetUse[name].provider)})
			g, warns, err := CompileWithWarnings(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings:\n%v", warns)
			}
			for _, ch := range g.Providers[0].Channels {
				if ch.Tier != plan.TierProviderCompat {
					continue
				}
				if ch.Origin != "preset:"+name {
					t.Errorf("channel %s: origin %q, want preset:%s", ch.Name, ch.Origin, name)
				}
				if _, err := time.Parse(time.DateOnly, ch.VerifiedAt); err != nil {
					t.Errorf("channel %s: verified_at %q: %v", ch.Name, ch.VerifiedAt, err)
				}
				if u, err := url.Parse(ch.VerifiedBy); err != nil || u.Scheme != "https" || u.Host == "" {
					t.Errorf("channel %s: verified_by %q is not the documentation page the claim was read from", ch.Name, ch.VerifiedBy)
				}
			}
		})
	}
}

// TestPresetImportBelowTheModule: the presets are fields of one package, so
// an import of a preset by its own path is refused with the one to write.
func TestPresetImportBelowTheModule(t *testing.T) {
	dir := writePolicy(t, map[string]string{"policy.cue": `package pistra

import "pistra.dev/presets/gemni"
`})
	_, err := Compile(dir)
	want := `policy.cue:3:8: no package "pistra.dev/presets/gemni": the presets are fields of one package; import "pistra.dev/presets" and write presets.gemni`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `did you mean "gemini"?`) {
		t.Fatalf("got %v, want an error containing %q and a suggestion", err, want)
	}
}

// TestSourceHashCoversPresets: a policy importing the presets is hashed
// with them (a pistrac with other presets builds another bundle), and one
// that does not is hashed without them.
func TestSourceHashCoversPresets(t *testing.T) {
	for _, c := range []struct {
		src     string
		presets bool
	}{
		{"package pistra\n\nimport \"pistra.dev/presets\"\n\nproviders: openai: presets.openai & {models: m: {}}\n", true},
		{"package pistra\n\nproviders: openai: {base_url: \"https://api.openai.com/v1\", models: m: {}, channels: native: {dialect: \"openai\", tier: \"native\"}}\n", false},
	} {
		l, errs := loadDir(writePolicy(t, map[string]string{"policy.cue": c.src}))
		if l == nil {
			t.Fatal(errs)
		}
		if got := len(l.presets) > 0; got != c.presets {
			t.Errorf("%q: hashed with the presets %v, want %v", c.src, got, c.presets)
		}
		without := *l
		without.presets = nil
		if c.presets == (l.sourceHash() == without.sourceHash()) {
			t.Errorf("%q: the presets change the hash: %v, want %v", c.src, !c.presets, c.presets)
		}
	}
}
