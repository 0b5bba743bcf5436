package e2e

import (
	"encoding/json"
	"testing"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// capProbe is a client request using one capability, written the way a
// client of the pair's inbound dialect writes it.
type capProbe struct {
	cap  plan.Cap
	body string
}

// Every form of each capability the capability readers detect, per inbound
// dialect. A form the translator drops makes the capability lost.
var (
	chatProbes = []capProbe{
		{plan.CapStrictTools, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{},"additionalProperties":false}}}]}`},
		{plan.CapStructuredOutput, `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`},
		{plan.CapStructuredOutput, `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`},
		{plan.CapPromptCaching, `{"model":"m","messages":[{"role":"user","content":"hi"}],"prompt_cache_key":"k"}`},
		{plan.CapPromptCaching, `{"model":"m","messages":[{"role":"user","content":"hi"}],"prompt_cache_retention":"24h"}`},
		{plan.CapPromptCaching, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi","prompt_cache_breakpoint":{"mode":"explicit"}}]}]}`},
		{plan.CapExtendedThinking, `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"high"}`},
		{plan.CapAudioInput, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"input_audio","input_audio":{"data":"QUFB","format":"wav"}}]}]}`},
		{plan.CapMultiChoice, `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":2}`},
	}
	messagesProbes = []capProbe{
		{plan.CapStrictTools, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","strict":true,"input_schema":{"type":"object"}}]}`},
		{plan.CapStructuredOutput, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`},
		{plan.CapPromptCaching, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"cache_control":{"type":"ephemeral"}}`},
		{plan.CapPromptCaching, `{"model":"m","max_tokens":9,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`},
		{plan.CapPromptCaching, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`},
		{plan.CapPromptCaching, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]}`},
		{plan.CapExtendedThinking, `{"model":"m","max_tokens":5000,"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled","budget_tokens":2048}}`},
		{plan.CapExtendedThinking, `{"model":"m","max_tokens":5000,"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"adaptive"}}`},
	}
	// responsesProbes leave out json_object, which the translator refuses
	// rather than drops.
	responsesProbes = []capProbe{
		{plan.CapStrictTools, `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","strict":true,"parameters":{"type":"object","properties":{},"additionalProperties":false}}]}`},
		{plan.CapStructuredOutput, `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}}`},
		{plan.CapPromptCaching, `{"model":"m","input":"hi","prompt_cache_key":"k"}`},
		{plan.CapPromptCaching, `{"model":"m","input":"hi","prompt_cache_retention":"24h"}`},
		{plan.CapPromptCaching, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi","prompt_cache_breakpoint":{}}]}]}`},
		{plan.CapExtendedThinking, `{"model":"m","input":"hi","reasoning":{"effort":"high"}}`},
		{plan.CapAudioInput, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_audio","input_audio":{"data":"QUFB","format":"wav"}}]}]}`},
	}
)

// pairProbes is what droppedBy sends through a pair, and how.
func pairProbes(pair plan.Translation) (plan.Route, []capProbe, func(dst, body []byte, o translate.Options) ([]byte, bool, error)) {
	switch pair {
	case plan.TranslateAnthropicOpenAI:
		return plan.RouteMessages, messagesProbes, translate.AnthropicToOpenAIRequest
	case plan.TranslateAnthropicResponses:
		return plan.RouteMessages, messagesProbes, translate.AnthropicToResponsesRequest
	case plan.TranslateResponsesAnthropic:
		return plan.RouteResponses, responsesProbes, func(dst, body []byte, o translate.Options) ([]byte, bool, error) {
			var custom []string
			return translate.ResponsesToAnthropicRequest(dst, body, o, &custom)
		}
	}
	return plan.RouteChatCompletions, chatProbes, translate.OpenAIToAnthropicRequest
}

// droppedBy measures what a pair loses with the same readers the gateway
// decides with: a capability is lost when the client's request uses it and
// the translated request does not. usage_details, which no request carries,
// is measured on a response with cache-write and reasoning counts.
func droppedBy(t *testing.T, pair plan.Translation) plan.CapSet {
	t.Helper()
	inbound, probes, request := pairProbes(pair)
	var lost plan.CapSet
	for _, p := range probes {
		if used := caps.Read(inbound, []byte(p.body)); used != plan.Of(p.cap) {
			t.Fatalf("%s probe %s: the reader sees %v", pair, p.body, used)
		}
		out, _, err := request(nil, []byte(p.body), translate.Options{DefaultMaxTokens: 1024})
		if err != nil {
			t.Fatalf("%s probe %s: %v", pair, p.body, err)
		}
		if !caps.Read(pair.Upstream(inbound), out).Has(p.cap) {
			lost |= plan.Of(p.cap)
		}
	}
	if !usageSplitsSurvive(t, pair) {
		lost |= plan.Of(plan.CapUsageDetails)
	}
	if pair == plan.TranslateAnthropicOpenAI && !thinkingComesBack(t) {
		lost |= plan.Of(plan.CapExtendedThinking)
	}
	return lost
}

// thinkingComesBack translates the answer of an OpenAI upstream that
// reasoned and reports whether the Anthropic client gets a thinking block:
// its extended_thinking is the blocks, not only the upstream reasoning.
func thinkingComesBack(t *testing.T) bool {
	t.Helper()
	out, _, err := translate.OpenAIToAnthropicResponse([]byte(`{"id":"c","choices":[{"message":{"content":"x"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":13,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":4}}}`), "m")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Content []struct {
			Type string `json:"type"`
		} `json:"content"`
	}
	mustDecode(t, out, &got)
	for _, b := range got.Content {
		if b.Type == "thinking" {
			return true
		}
	}
	return false
}

// usageSplitsSurvive translates a response reporting 3 cache-written and 4
// reasoning tokens and reports whether the client's usage still says so.
func usageSplitsSurvive(t *testing.T, pair plan.Translation) bool {
	t.Helper()
	switch pair {
	case plan.TranslateResponsesAnthropic:
		out, _, err := translate.AnthropicToResponsesResponse([]byte(`{"id":"msg_1","type":"message","content":[],"stop_reason":"end_turn",`+
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"output_tokens":9,"output_tokens_details":{"thinking_tokens":4}}}`), "m",
			func(string) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Usage struct {
				Input struct {
					CacheWrite int `json:"cache_write_tokens"`
				} `json:"input_tokens_details"`
				Output struct {
					Reasoning int `json:"reasoning_tokens"`
				} `json:"output_tokens_details"`
			}
		}
		mustDecode(t, out, &got)
		return got.Usage.Input.CacheWrite == 3 && got.Usage.Output.Reasoning == 4
	case plan.TranslateAnthropicResponses:
		out, _, err := translate.ResponsesToAnthropicResponse([]byte(`{"id":"resp_1","object":"response","status":"completed","output":[],`+
			`"usage":{"input_tokens":13,"output_tokens":9,"input_tokens_details":{"cache_write_tokens":3},"output_tokens_details":{"reasoning_tokens":4}}}`), "m")
		if err != nil {
			t.Fatal(err)
		}
		return anthropicSplits(t, out)
	}
	if pair == plan.TranslateOpenAIAnthropic {
		out, _, err := translate.AnthropicToOpenAIResponse([]byte(`{"id":"msg_1","type":"message","content":[],"stop_reason":"end_turn",`+
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"output_tokens":9,"output_tokens_details":{"thinking_tokens":4}}}`), "m")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Usage struct {
				Prompt struct {
					CacheWrite int `json:"cache_write_tokens"`
				} `json:"prompt_tokens_details"`
				Completion struct {
					Reasoning int `json:"reasoning_tokens"`
				} `json:"completion_tokens_details"`
			}
		}
		mustDecode(t, out, &got)
		return got.Usage.Prompt.CacheWrite == 3 && got.Usage.Completion.Reasoning == 4
	}
	out, _, err := translate.OpenAIToAnthropicResponse([]byte(`{"id":"c","choices":[{"message":{"content":"x"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":13,"completion_tokens":9,"prompt_tokens_details":{"cache_write_tokens":3},"completion_tokens_details":{"reasoning_tokens":4}}}`), "m")
	if err != nil {
		t.Fatal(err)
	}
	return anthropicSplits(t, out)
}

// anthropicSplits reports whether an Anthropic answer says 3 cache-written
// and 4 thinking tokens.
func anthropicSplits(t *testing.T, out []byte) bool {
	t.Helper()
	var got struct {
		Usage struct {
			CacheWrite int `json:"cache_creation_input_tokens"`
			Details    struct {
				Thinking int `json:"thinking_tokens"`
			} `json:"output_tokens_details"`
		}
	}
	mustDecode(t, out, &got)
	return got.Usage.CacheWrite == 3 && got.Usage.Details.Thinking == 4
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}

// TestTranslatedCandidatesDeclareWhatTheTranslatorDrops: every translated
// candidate the compiler plans declares as lost exactly what the translator
// measurably drops, so fidelity selection decides on the truth.
func TestTranslatedCandidatesDeclareWhatTheTranslatorDrops(t *testing.T) {
	g := compilePolicy(t, unreachablePolicy())
	dropped := map[plan.Translation]plan.CapSet{}
	for _, list := range g.CandidateLists {
		for _, c := range list {
			if c.Translate == plan.TranslateNone {
				continue
			}
			if _, ok := dropped[c.Translate]; !ok {
				dropped[c.Translate] = droppedBy(t, c.Translate)
			}
			if declared := plan.AllCaps &^ c.Preserves; declared != dropped[c.Translate] {
				t.Errorf("%s candidate on %s declares %v lost, the translator drops %v",
					c.Translate, g.Providers[c.Provider].Name, declared, dropped[c.Translate])
			}
		}
	}
	if len(dropped) != len(plan.Translations) {
		t.Fatalf("the test policy plans translated candidates for %v, want every pair", dropped)
	}
}

// TestFidelitySelectsTranslatedCandidates: the fidelity rules apply to
// translated candidates as to any other, read by the same reader. A
// strict-tools request from an Anthropic client to an OpenAI-only provider
// is refused under reject and forwarded lossy under allow; a request using
// nothing the pair drops is served; a profile pinning usage_details has no
// translated candidate at all.
func TestFidelitySelectsTranslatedCandidates(t *testing.T) {
	g := compilePolicy(t, unreachablePolicy())
	strict := []byte(messagesProbes[0].body)
	cached := []byte(chatProbes[5].body) // a cache breakpoint: kept by openai→anthropic
	tests := []struct {
		name     string
		route    plan.Route
		model    string
		body     []byte
		onLoss   plan.LossAction
		rejected bool
		lossy    bool
	}{
		{"strict tools rejected", plan.RouteMessages, "gpt-4o-mini", strict, "reject", true, false},
		{"strict tools allowed lossy", plan.RouteMessages, "gpt-4o-mini", strict, "allow", false, true},
		{"prompt caching kept", plan.RouteChatCompletions, "claude-haiku-4-5", cached, "reject", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := g.Lookup(profileIndex(t, g, "default"), tt.route, tt.model)
			if !ok {
				t.Fatalf("no plan for %s on %s", tt.model, tt.route)
			}
			cands := g.CandidatesOf(p)
			for _, c := range cands {
				if c.Translate == plan.TranslateNone {
					t.Fatalf("%s on %s has an untranslated candidate: %+v", tt.model, tt.route, c)
				}
			}
			sel := plan.Select(cands, caps.Read(tt.route, tt.body), tt.onLoss, nil)
			if sel.Rejected != tt.rejected || sel.Lossy != tt.lossy || (len(sel.Attempt) == 0) != tt.rejected {
				t.Errorf("selection %+v, want rejected=%v lossy=%v", sel, tt.rejected, tt.lossy)
			}
			for _, l := range sel.Passed {
				if l.Missing != plan.Of(plan.CapStrictTools) {
					t.Errorf("candidate %d loses %v, want strict_tools", l.Candidate, l.Missing)
				}
			}
		})
	}
	p, ok := g.Lookup(profileIndex(t, g, "metered"), plan.RouteChatCompletions, "claude-haiku-4-5")
	if !ok || len(g.CandidatesOf(p)) != 0 {
		t.Fatalf("the usage_details profile reaches claude over chat completions: %+v", p)
	}
	for _, s := range g.SkipsOf(p) {
		if s.Reason != "fidelity_loss" || !s.Missing.Has(plan.CapUsageDetails) {
			t.Errorf("skip %+v, want fidelity_loss missing usage_details", s)
		}
	}
}

// unreachablePolicy fills the standard policy with addresses nothing is
// asked at: these tests read the compiled graph only.
func unreachablePolicy() policy {
	return policy{OpenAI: "http://127.0.0.1:9/v1", Backup: "http://127.0.0.1:9/v1", Anthropic: "http://127.0.0.1:9/v1", Dead: "http://127.0.0.1:9/v1"}
}

func profileIndex(t *testing.T, g *plan.Graph, name string) int {
	t.Helper()
	for i, p := range g.Profiles {
		if p.Name == name {
			return i
		}
	}
	t.Fatalf("no profile %q", name)
	return -1
}
