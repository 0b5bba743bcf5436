package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"

	"github.com/pistra/pistra/internal/testkit"
)

// keyLenient names a profile that forwards lossy requests.
const keyLenient = "sk-e2e-lenient"

// Provenance of the compat channels' claims in fidelityPolicy.
const (
	vendorOrigin  = "overlays/vendor.cue"
	vendorSource  = "https://vendor.example/docs/openai-compat"
	relayOrigin   = "overlays/relay.cue"
	relaySource   = "https://relay.example/compat-matrix"
	claudeOrigin  = "overlays/claude-compat.cue"
	claudeSource  = "https://claude-compat.example/limits"
	nativeOrigin  = "native"
	compatChannel = "openai-compat"
)

// fidelityPolicy: "tools" is served first by vendor's compat channel (which
// keeps structured output only), then by native-openai's native channel;
// "compat-only" by vendor, then relay (compat, keeps strict tools and
// structured output), never natively; "claude-haiku-4-5" only by an
// Anthropic-dialect compat channel that keeps prompt caching. vendor and
// native-openai answer on the OpenAI fake, relay on the backup fake.
func fidelityPolicy(p policy) testkit.Policy {
	compat := func(dialect, verifiedAt, source, origin string, routes []string, keeps ...string) map[string]testkit.Channel {
		name := map[string]string{"openai": compatChannel, "anthropic": "compat"}[dialect]
		return map[string]testkit.Channel{name: {Dialect: dialect, Tier: "provider_compat", Routes: routes, Preserves: testkit.Keeps(keeps...),
			VerifiedAt: verifiedAt, VerifiedBy: source, Origin: origin}}
	}
	chatOnly := []string{"chat_completions"}
	vendor := testkit.Provider{BaseURL: p.OpenAI, CredentialEnv: envOpenAI, Models: modelsOf(0, "vendor-large"),
		Aliases:  map[string]string{"tools": "vendor-large", "compat-only": "vendor-large"},
		Channels: compat("openai", "2026-11-20", vendorSource, vendorOrigin, chatOnly, "structured_output"),
		Failover: failover([]string{"native-openai", "relay"}, "connect", "5xx", "429")}
	nativeOpenAI := testkit.Provider{BaseURL: p.OpenAI, CredentialEnv: envOpenAI, Models: modelsOf(0, "gpt-4o"),
		Aliases: map[string]string{"tools": "gpt-4o"}, Channels: nativeChannel("openai")}
	relay := testkit.Provider{BaseURL: p.Backup, CredentialEnv: envBackup, Models: modelsOf(0, "relay-large"),
		Aliases:  map[string]string{"compat-only": "relay-large"},
		Channels: compat("openai", "2026-10-01", relaySource, relayOrigin, chatOnly, "strict_tools", "structured_output")}
	claude := testkit.Provider{BaseURL: p.Anthropic, CredentialEnv: envAnthropic, Auth: "x-api-key",
		Models:   modelsOf(1024, "claude-haiku-4-5"),
		Channels: compat("anthropic", "2026-09-15", claudeSource, claudeOrigin, nil, "prompt_caching")}

	return testkit.Policy{
		Providers: map[string]testkit.Provider{"vendor": vendor, "native-openai": nativeOpenAI, "relay": relay, "claude-compat": claude},
		Primary:   map[string]string{"tools": "vendor", "compat-only": "vendor"},
		Profiles: map[string]testkit.Profile{
			"default": {},
			"lenient": {OnFidelityLoss: "allow"},
			"metered": {AllowedModels: []string{"tools"}, RequireCaps: []string{"usage_details"}, OnFidelityLoss: "allow"},
		},
		Keys: []testkit.Key{
			clientKey("default", "default", keyDefault),
			clientKey("lenient", "lenient", keyLenient),
			clientKey("metered", "metered", keyMetered),
		},
	}
}

// strictParams is a chat request with a strict function tool, plus
// whatever more the test adds.
func strictParams(model string) openai.ChatCompletionNewParams {
	p := chatParams(model)
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:       "lookup",
		Strict:     openai.Bool(true),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
	})}
	return p
}

// everythingParams also asks for a JSON-schema answer and two choices:
// strict tools, structured output and multi-choice at once.
func everythingParams(model string) openai.ChatCompletionNewParams {
	p := strictParams(model)
	p.N = openai.Int(2)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{"type": "object"}},
	}}
	return p
}

// downgrade reads pistra_channel_downgrade_total for one label set.
func (e *env) downgrade(provider, channel, c, action string) float64 {
	e.t.Helper()
	return testkit.Counter(e.t, e.srv.Metrics().Registry(), "pistra_channel_downgrade_total",
		map[string]string{"provider": provider, "channel": channel, "cap": c, "action": action})
}

// TestStrictToolsSkipCompatChannel: a strict-tools request is routed past
// the compat channel that would drop strict to the native one behind it;
// the same request without the tool stays on the compat channel.
func TestStrictToolsSkipCompatChannel(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	client := e.openaiClient(keyDefault)
	var resp *http.Response
	if _, err := client.Chat.Completions.New(context.Background(), strictParams("tools"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	call := lastCall(t, e.openai)
	if call.Model != "gpt-4o" || resp.Header.Get("Pistra-Provider") != "native-openai" || resp.Header.Get("Pistra-Channel-Origin") != nativeOrigin {
		t.Fatalf("served by %q (%q, origin %q), want native-openai's gpt-4o", resp.Header.Get("Pistra-Provider"), call.Model, resp.Header.Get("Pistra-Channel-Origin"))
	}
	if !strings.Contains(string(call.Body), `"strict":true`) {
		t.Errorf("the strict tool did not reach the native channel: %s", call.Body)
	}
	if got := e.downgrade("vendor", compatChannel, "strict_tools", "skipped"); got != 1 {
		t.Errorf("skipped = %v, want 1", got)
	}
	scrape := e.scrape()
	if !strings.Contains(scrape, `pistra_channel_downgrade_total{action="skipped",cap="strict_tools",channel="openai-compat",provider="vendor"} 1`) {
		t.Errorf("/metrics lacks the skip:\n%s", grepLines(scrape, "pistra_channel_downgrade_total"))
	}

	if _, err := client.Chat.Completions.New(context.Background(), chatParams("tools"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if lastCall(t, e.openai).Model != "vendor-large" || resp.Header.Get("Pistra-Channel-Origin") != vendorOrigin {
		t.Errorf("a plain request left the compat channel: origin %q", resp.Header.Get("Pistra-Channel-Origin"))
	}
	e.wantOriginLogged(nativeOrigin, vendorOrigin)
}

// fidelityRefusal is what the tests read of error.pistra (both dialects),
// and of error.details, where the Anthropic dialect still copies it.
type fidelityRefusal struct {
	Used       []string                `json:"used"`
	Candidates []testkit.WireCandidate `json:"candidates"`
}

// lostBy renders a refusal as provider=lost caps, with each claim's source.
func (f fidelityRefusal) lostBy() string {
	var parts []string
	for _, c := range f.Candidates {
		parts = append(parts, c.Provider+"/"+c.Channel+"="+strings.Join(c.Lost, "+")+"@"+c.Origin+"|"+c.VerifiedBy)
	}
	return strings.Join(parts, " ")
}

// TestRefusalNamesEveryLoss: with only compat channels left, a request
// using three capabilities is refused, and the refusal names per channel
// every capability it drops and where the claim was read.
func TestRefusalNamesEveryLoss(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	client := e.openaiClient(keyDefault)
	_, err := client.Chat.Completions.New(context.Background(), everythingParams("compat-only"))
	apiErr := wantOpenAIError(t, err, http.StatusBadRequest, "fidelity_loss")
	var raw struct {
		Pistra fidelityRefusal `json:"pistra"`
	}
	if err := json.Unmarshal([]byte(apiErr.RawJSON()), &raw); err != nil {
		t.Fatalf("error JSON %s: %v", apiErr.RawJSON(), err)
	}
	want := "vendor/openai-compat=strict_tools+multi_choice@" + vendorOrigin + "|" + vendorSource +
		" relay/openai-compat=multi_choice@" + relayOrigin + "|" + relaySource
	if got := raw.Pistra.lostBy(); got != want || strings.Join(raw.Pistra.Used, ",") != "strict_tools,structured_output,multi_choice" {
		t.Fatalf("refusal\n got  %s (used %v)\n want %s", got, raw.Pistra.Used, want)
	}
	for _, part := range []string{"strict_tools", "multi_choice", vendorSource, relaySource} {
		if !strings.Contains(apiErr.Message, part) {
			t.Errorf("message lacks %q: %s", part, apiErr.Message)
		}
	}
	if n := len(e.openai.Requests()) + len(e.backup.Requests()); n != 0 {
		t.Errorf("a refused request reached an upstream %d times", n)
	}
	for _, c := range []struct{ provider, cap string }{{"vendor", "strict_tools"}, {"vendor", "multi_choice"}, {"relay", "multi_choice"}} {
		if got := e.downgrade(c.provider, compatChannel, c.cap, "rejected"); got != 1 {
			t.Errorf("rejected %s %s = %v, want 1", c.provider, c.cap, got)
		}
	}
	e.wantOriginLogged(vendorOrigin + "," + relayOrigin)
}

// TestAnthropicRefusalDetails: the Anthropic dialect carries the same
// data under error.pistra, as the OpenAI dialect does, and its deprecated
// copy under error.details, beside error_code.
func TestAnthropicRefusalDetails(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	p := messageParams("claude-haiku-4-5")
	p.MaxTokens = 2048
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	client := e.anthropicClient(keyDefault)
	_, err := client.Messages.New(context.Background(), p)
	apiErr := wantAnthropicError(t, err, http.StatusBadRequest, "fidelity_loss")
	var raw struct {
		Error struct {
			Details fidelityRefusal `json:"details"`
			Pistra  fidelityRefusal `json:"pistra"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(apiErr.RawJSON()), &raw); err != nil {
		t.Fatal(err)
	}
	want := "claude-compat/compat=extended_thinking@" + claudeOrigin + "|" + claudeSource
	for _, got := range []fidelityRefusal{raw.Error.Pistra, raw.Error.Details} {
		if got.lostBy() != want || got.Candidates[0].VerifiedAt != "2026-09-15" || strings.Join(got.Used, ",") != "extended_thinking" {
			t.Fatalf("refusal %s, want %s in error.pistra and error.details", apiErr.RawJSON(), want)
		}
	}
	if _, err := client.Messages.New(context.Background(), messageParams("claude-haiku-4-5")); err != nil {
		t.Fatalf("a request without thinking: %v", err)
	}
}

// TestAllowForwardsLossy: a profile with on_fidelity_loss: allow forwards
// on the candidate that drops least (relay, a failover candidate, ahead of
// the primary) and counts what was dropped.
func TestAllowForwardsLossy(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	var resp *http.Response
	client := e.openaiClient(keyLenient)
	_, err := client.Chat.Completions.New(context.Background(), everythingParams("compat-only"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Pistra-Provider") != "relay" || resp.Header.Get("Pistra-Channel-Origin") != relayOrigin || lastCall(t, e.backup).Model != "relay-large" {
		t.Fatalf("served by %q origin %q", resp.Header.Get("Pistra-Provider"), resp.Header.Get("Pistra-Channel-Origin"))
	}
	if len(e.openai.Requests()) != 0 {
		t.Errorf("vendor was tried too")
	}
	if got := e.downgrade("relay", compatChannel, "multi_choice", "allowed"); got != 1 {
		t.Errorf("allowed = %v, want 1", got)
	}
	if got := e.downgrade("vendor", compatChannel, "strict_tools", "allowed"); got != 0 {
		t.Errorf("the candidate that did not serve was counted: %v", got)
	}
	e.wantOriginLogged(relayOrigin)
}

// TestRequireCapsOverridesAllow: require_caps: [usage_details] keeps the
// metered profile off vendor's compat channel although the profile allows
// lossy serving and the request uses nothing that channel drops: the
// channel is out of the running before selection, as preflight shows.
func TestRequireCapsOverridesAllow(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	client := e.openaiClient(keyMetered)
	var resp *http.Response
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("tools"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Pistra-Provider") != "native-openai" || lastCall(t, e.openai).Model != "gpt-4o" {
		t.Fatalf("metered request served by %q", resp.Header.Get("Pistra-Provider"))
	}
	status, pf := e.adminPreflight("metered", "", chatParams("tools"))
	if status != http.StatusOK || pf.OnFidelityLoss != "allow" || strings.Join(pf.RequireCaps, ",") != "usage_details" ||
		pf.Serve.Provider != "native-openai" || len(pf.AttemptOrder) != 1 {
		t.Fatalf("preflight %d %+v", status, pf)
	}
	if got := pf.SkipReasons(); got != "vendor/openai-compat:fidelity_loss[usage_details] relay/:not_served[]" {
		t.Errorf("static skips %q", got)
	}
}

// TestCatalogReport: the admin report lists every routable channel with
// its claim's provenance and age, from the serving snapshot.
func TestCatalogReport(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	resp := e.adminDo(http.MethodGet, "/admin/v1/catalog/report")
	defer resp.Body.Close()
	var rep struct {
		SourceHash string `json:"source_hash"`
		Channels   []struct {
			Provider   string   `json:"provider"`
			Channel    string   `json:"channel"`
			Dialect    string   `json:"dialect"`
			Tier       string   `json:"tier"`
			Preserves  []string `json:"preserves"`
			Origin     string   `json:"origin"`
			VerifiedAt string   `json:"verified_at"`
			VerifiedBy string   `json:"verified_by"`
			AgeDays    *int     `json:"age_days"`
		} `json:"channels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	var got []string
	for _, c := range rep.Channels {
		age := "-"
		if c.AgeDays != nil && *c.AgeDays > 0 {
			age = "dated"
		}
		got = append(got, strings.Join([]string{c.Provider, c.Channel, c.Dialect, c.Tier, strings.Join(c.Preserves, "+"),
			c.Origin, c.VerifiedAt, c.VerifiedBy, age}, " "))
	}
	want := []string{
		"vendor openai-compat openai provider_compat structured_output " + vendorOrigin + " 2026-11-20 " + vendorSource + " dated",
		"native-openai native openai native strict_tools+structured_output+prompt_caching+extended_thinking+usage_details+audio_input+multi_choice native   -",
		// Anthropic clients reach native-openai through the translator: what
		// they keep, on the translator's claim.
		"native-openai native anthropic translation audio_input+multi_choice translation:anthropic_openai  " +
			translate.Claim(plan.TranslateAnthropicOpenAI) + " -",
		"native-openai native anthropic translation strict_tools+structured_output+extended_thinking+usage_details+audio_input+multi_choice translation:anthropic_responses  " +
			translate.Claim(plan.TranslateAnthropicResponses) + " -",
		"relay openai-compat openai provider_compat strict_tools+structured_output " + relayOrigin + " 2026-10-01 " + relaySource + " dated",
		"claude-compat compat anthropic provider_compat prompt_caching " + claudeOrigin + " 2026-09-15 " + claudeSource + " dated",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || rep.SourceHash == "" {
		t.Errorf("catalog report\n got  %q\n want %q", got, want)
	}
}

// wantOriginLogged checks a request log line carries each origin as
// pistra.channel_origin.
func (e *env) wantOriginLogged(origins ...string) {
	e.t.Helper()
	logged := map[string]bool{}
	for _, line := range strings.Split(e.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" {
			continue
		}
		if o, ok := rec["pistra.channel_origin"].(string); ok {
			logged[o] = true
		}
	}
	for _, o := range origins {
		if !logged[o] {
			e.t.Errorf("no request log line with pistra.channel_origin %q (logged: %v)", o, logged)
		}
	}
}

// scrape reads the public /metrics as Prometheus would.
func (e *env) scrape() string {
	e.t.Helper()
	resp, err := http.Get("http://" + e.srv.PublicAddr() + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
