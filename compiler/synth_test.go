package compiler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pistra/pistra/internal/testkit"
)

// The synthetic policy is the size the issue sets for the build benchmark:
// 50 providers in 10 families of 5, 300 models (6 owned per provider, each
// provider also serving two of a neighbour's so failover has somewhere to
// go), 40 profiles, 100 keys, 20 budgets.
const (
	synthFamilies      = 10
	synthFamilySize    = 5
	synthModelsEach    = 6
	synthProfiles      = 40
	synthKeys          = 100
	synthBudgets       = 20
	synthProviderCount = synthFamilies * synthFamilySize
	synthModelCount    = synthProviderCount * synthModelsEach
)

// Family kinds, by family index: OpenAI-native (the fifth member of each
// an Azure deployment), a Gemini-like provider reachable only through its
// OpenAI-compatible endpoint, Anthropic-native with an OpenAI-compatible
// channel, and self-hosted pools.
func synthKind(family int) string {
	switch {
	case family < 5:
		return "openai"
	case family == 5:
		return "gemini"
	case family < 9:
		return "anthropic"
	}
	return "vllm"
}

// synthProvider names provider (family, member).
func synthProvider(family, member int) string {
	kind := synthKind(family)
	if kind == "openai" && member == synthFamilySize-1 {
		kind = "azure"
	}
	return fmt.Sprintf("%s-%02d-%d", kind, family, member)
}

func synthModel(provider, j int) string {
	return fmt.Sprintf("model-%03d", provider*synthModelsEach+j)
}

// writeSynthPolicy writes the synthetic policy into dir as several CUE
// files, the way a real deployment splits its catalog.
func writeSynthPolicy(dir string) error {
	files := map[string]string{
		"pools.cue":    synthPools(),
		"primary.cue":  synthPrimary(),
		"profiles.cue": synthProfilesCUE(),
		"keys.cue":     synthKeysCUE(),
		"budgets.cue":  synthBudgetsCUE(),
	}
	for f := range synthFamilies {
		files[fmt.Sprintf("providers_%02d.cue", f)] = synthFamily(f)
	}
	for name, body := range files {
		src := "package pistra\n\n" + body
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func synthFamily(f int) string {
	var b strings.Builder
	b.WriteString("providers: {\n")
	for m := range synthFamilySize {
		synthProviderCUE(&b, f, m)
	}
	b.WriteString("}\n")
	return b.String()
}

// synthProviderCUE writes one provider: its endpoint, models, aliases,
// channels, retries, timeout and failover chain.
func synthProviderCUE(b *strings.Builder, f, m int) {
	kind, name, idx := synthKind(f), synthProvider(f, m), f*synthFamilySize+m
	fmt.Fprintf(b, "\t%q: {\n", name)
	if kind == "vllm" {
		fmt.Fprintf(b, "\t\tpool: %q\n", fmt.Sprintf("pool-%d", m))
	} else {
		fmt.Fprintf(b, "\t\tbase_url: %q\n\t\tcredential_env: %q\n",
			fmt.Sprintf("https://%s.example.test/v1", name), strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"_KEY")
	}
	if strings.HasPrefix(name, "azure") {
		b.WriteString("\t\tauth: \"api-key\"\n\t\tquery: \"api-version\": \"2024-10-21\"\n")
	}
	if kind == "anthropic" {
		b.WriteString("\t\theaders: \"anthropic-version\": \"2023-06-01\"\n")
	}
	b.WriteString("\t\tmodels: {\n")
	for j := range synthModelsEach {
		synthModelCUE(b, kind, synthModel(idx, j))
	}
	prev := f*synthFamilySize + (m+synthFamilySize-1)%synthFamilySize
	for j := range 2 { // a neighbour's first two, so its failover lands here
		synthModelCUE(b, kind, synthModel(prev, j))
	}
	b.WriteString("\t\t}\n")
	fmt.Fprintf(b, "\t\taliases: {fast: %q, smart: %q, %q: %q}\n",
		synthModel(idx, 0), synthModel(idx, 1), fmt.Sprintf("family-%02d", f), synthModel(idx, 2))
	synthChannels(b, kind, idx)
	fmt.Fprintf(b, "\t\tretries: {max: %d, backoff: \"%dms\", on: [\"connect\", \"5xx\", \"429\"]}\n", 1+m%3, 100*(1+m))
	fmt.Fprintf(b, "\t\ttimeout: \"%ds\"\n", 30+10*m)
	synthFailover(b, f, m)
	b.WriteString("\t}\n")
}

func synthModelCUE(b *strings.Builder, kind, model string) {
	if kind == "anthropic" {
		fmt.Fprintf(b, "\t\t\t%q: {max_tokens: 8192}\n", model)
		return
	}
	fmt.Fprintf(b, "\t\t\t%q: {}\n", model)
}

// synthChannels declares the provider's channels by kind: native only,
// compat only (Gemini-like), or native plus a gated compat channel
// (Anthropic's OpenAI-compatible endpoint).
func synthChannels(b *strings.Builder, kind string, idx int) {
	b.WriteString("\t\tchannels: {\n")
	switch kind {
	case "openai", "vllm":
		b.WriteString("\t\t\tnative: {dialect: \"openai\", tier: \"native\"}\n")
	case "gemini":
		b.WriteString("\t\t\t\"openai-compat\": {\n\t\t\t\tdialect: \"openai\", tier: \"provider_compat\"\n" +
			"\t\t\t\troutes: [\"chat_completions\", \"embeddings\"]\n" +
			"\t\t\t\tpreserves: [\"structured_output\", \"multi_choice\", \"usage_details\", \"audio_input\"]\n" +
			"\t\t\t\tverified_at: \"2026-10-02\", verified_by: \"https://ai.google.dev/gemini-api/docs/openai\"\n\t\t\t}\n")
	case "anthropic":
		b.WriteString("\t\t\tnative: {dialect: \"anthropic\", tier: \"native\"}\n")
		fmt.Fprintf(b, "\t\t\t\"openai-compat\": {\n\t\t\t\tdialect: \"openai\", tier: \"provider_compat\"\n"+
			"\t\t\t\troutes: [\"chat_completions\"]\n\t\t\t\tmodels: [%q, %q, %q]\n"+
			"\t\t\t\tpreserves: [\"extended_thinking\"]\n"+
			"\t\t\t\tverified_at: \"2026-11-20\", verified_by: \"https://docs.anthropic.com/en/api/openai-sdk\"\n\t\t\t}\n",
			synthModel(idx, 0), synthModel(idx, 1), synthModel(idx, 3))
	}
	b.WriteString("\t\t}\n")
}

// synthFailover chains each provider to the next two of its family; the
// OpenAI families also fail over to an Anthropic provider (a translated
// candidate), and every other provider opts into timeout failover.
func synthFailover(b *strings.Builder, f, m int) {
	to := []string{
		synthProvider(f, (m+1)%synthFamilySize),
		synthProvider(f, (m+2)%synthFamilySize),
	}
	if synthKind(f) == "openai" {
		to = append(to, synthProvider(6+f%3, m))
	}
	on := `"connect", "5xx", "429"`
	if m%2 == 0 {
		on += `, "timeout"`
	}
	fmt.Fprintf(b, "\t\tfailover: {to: [%s], on: [%s]}\n", quoteAll(to), on)
}

func synthPools() string {
	var b strings.Builder
	b.WriteString("pools: {\n")
	for m := range synthFamilySize {
		fmt.Fprintf(&b, "\t\"pool-%d\": {\n\t\tdns: \"vllm-%d.pistra.svc:8000\"\n", m, m)
		if m%2 == 0 {
			fmt.Fprintf(&b, "\t\tpicker: \"picker-%d.pistra.svc:9002\"\n", m)
		}
		fmt.Fprintf(&b, "\t\tsubsets: {gold: {dns: \"vllm-%d-gold.pistra.svc:8000\"}, silver: {dns: \"vllm-%d-silver.pistra.svc:8000\"}}\n\t}\n", m, m)
	}
	b.WriteString("}\n")
	return b.String()
}

// synthPrimary names the first provider of every public name served by
// more than one: the owner of a shared model, the first provider of each
// family for its family alias, and the very first for fast and smart.
func synthPrimary() string {
	var b strings.Builder
	b.WriteString("primary: {\n")
	first := synthProvider(0, 0)
	fmt.Fprintf(&b, "\tfast: %q\n\tsmart: %q\n", first, first)
	for f := range synthFamilies {
		fmt.Fprintf(&b, "\t%q: %q\n", fmt.Sprintf("family-%02d", f), synthProvider(f, 0))
		for m := range synthFamilySize {
			for j := range 2 {
				fmt.Fprintf(&b, "\t%q: %q\n", synthModel(f*synthFamilySize+m, j), synthProvider(f, m))
			}
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// synthProfilesCUE writes 40 profiles: the first half unrestricted (some
// lenient on fidelity loss, some pinned to a pool subset, some with their
// own access rule), the second half with allowed_models lists, a third of
// them with require_caps.
func synthProfilesCUE() string {
	var b strings.Builder
	b.WriteString("on_fidelity_loss: \"reject\"\n\naccess_rules: [\n" +
		"\t{name: \"retired-model\", when: \"model == 'model-299' && route == 'embeddings'\", code: \"model_retired\", message: \"model-299 no longer serves embeddings\"},\n" +
		"]\n\nprofiles: {\n")
	for p := range synthProfiles {
		fmt.Fprintf(&b, "\t%q: {\n", fmt.Sprintf("team-%02d", p))
		if p < synthProfiles/2 {
			synthOpenProfile(&b, p)
		} else {
			synthPinnedProfile(&b, p)
		}
		fmt.Fprintf(&b, "\t\tbudgets: [%q]\n\t}\n", fmt.Sprintf("budget-%02d", p%synthBudgets))
	}
	b.WriteString("}\n")
	return b.String()
}

func synthOpenProfile(b *strings.Builder, p int) {
	if p%4 == 1 {
		b.WriteString("\t\ton_fidelity_loss: \"allow\"\n")
	}
	if p%5 == 2 {
		b.WriteString("\t\tpool_subset: \"gold\"\n")
	}
	switch p % 7 {
	case 3:
		b.WriteString("\t\taccess_rules: [{name: \"no-embeddings\", when: \"route == 'embeddings'\", code: \"route_denied\"}]\n")
	case 5:
		b.WriteString("\t\taccess_rules: [{name: \"frozen-key\", when: \"key == 'key-005'\", code: \"key_frozen\"}]\n")
	}
}

// synthPinnedProfile allows a few OpenAI- and Anthropic-served models by
// prefix and exact name. Only models with a native channel are allowed
// where caps are required, so every allowed model keeps a candidate.
func synthPinnedProfile(b *strings.Builder, p int) {
	oai := p % (5 * synthFamilySize) // an OpenAI-family provider
	ant := 6*synthFamilySize + p%(3*synthFamilySize)
	allowed := []string{
		fmt.Sprintf("model-%02d*", (oai*synthModelsEach)/10),
		synthModel(ant, 2), synthModel(ant, 4), "fast",
	}
	fmt.Fprintf(b, "\t\tallowed_models: [%s]\n", quoteAll(allowed))
	switch p % 3 {
	case 0:
		b.WriteString("\t\trequire_caps: [\"usage_details\"]\n")
	case 1:
		b.WriteString("\t\trequire_caps: [\"strict_tools\", \"structured_output\"]\n")
	}
}

func synthKeysCUE() string {
	var b strings.Builder
	b.WriteString("keys: [\n")
	for k := range synthKeys {
		fmt.Fprintf(&b, "\t{name: %q, profile: %q, hash: %q},\n",
			fmt.Sprintf("key-%03d", k), fmt.Sprintf("team-%02d", k%synthProfiles), testkit.HashKey(fmt.Sprintf("sk-synth-%03d", k)))
	}
	b.WriteString("]\n")
	return b.String()
}

// synthBudgetsCUE writes 20 budgets over every window and cost type,
// every fifth with a CEL cost.
func synthBudgetsCUE() string {
	windows := []string{"minute", "hour", "day", "month"}
	types := []string{"InputToken", "OutputToken", "TotalToken", "CachedInputToken", "CacheCreationInputToken", "ReasoningToken"}
	exprs := []string{
		"input_tokens + output_tokens * 4u",
		"model.startsWith('model-0') ? total_tokens * 2u : total_tokens",
		"double(input_tokens) * 0.25 + double(output_tokens) + double(reasoning_tokens)",
		"backend == 'openai-00-0' ? total_tokens - cached_input_tokens : total_tokens + cache_creation_input_tokens",
	}
	var b strings.Builder
	b.WriteString("budgets: [\n")
	for i := range synthBudgets {
		per := "key"
		if i%3 == 2 {
			per = "profile"
		}
		cost := fmt.Sprintf("type: %q", types[i%len(types)])
		if i%5 == 4 {
			cost = fmt.Sprintf("type: \"CEL\", cel: %q", exprs[(i/5)%len(exprs)])
		}
		fmt.Fprintf(&b, "\t{name: %q, limit: %d, window: %q, per: %q, cost: {%s}, cost_per_call: %d},\n",
			fmt.Sprintf("budget-%02d", i), 100000*(i+1), windows[i%len(windows)], per, cost, i%3)
	}
	b.WriteString("]\n")
	return b.String()
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
