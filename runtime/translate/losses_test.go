package translate

import (
	"bytes"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// lossProbe exercises one capability through a translator and reports
// whether the output lost it.
type lossProbe struct {
	cap  plan.Cap
	lost func(t *testing.T) bool
}

// TestLossesMatchCatalog probes every capability a dialect can express and
// requires the capabilities found lost to be exactly the pair's declared
// losses in plan.TranslationLosses: the fidelity gate decides on that table,
// so a translator that drops more (or less) would make it lie.
func TestLossesMatchCatalog(t *testing.T) {
	for pair, probes := range map[plan.Translation][]lossProbe{
		plan.TranslateOpenAIAnthropic:    openAIAnthropicProbes(),
		plan.TranslateAnthropicOpenAI:    anthropicOpenAIProbes(),
		plan.TranslateResponsesAnthropic: responsesAnthropicProbes(),
		plan.TranslateAnthropicResponses: anthropicResponsesProbes(),
	} {
		var lost plan.CapSet
		for _, p := range probes {
			if p.lost(t) {
				lost |= plan.Of(p.cap)
			}
		}
		if want := plan.TranslationLosses[pair]; lost != want {
			t.Errorf("%s drops %v, the catalog declares %v", pair, lost, want)
		}
	}
}

var probeOptions = Options{DefaultMaxTokens: 1024}

// oaiProbe translates a one-part user message whose text part is finished
// by rest, and reports whether the output contains none of marks.
func oaiProbe(rest string, marks ...string) func(t *testing.T) bool {
	return func(t *testing.T) bool {
		body := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"` + rest
		out, _, err := OpenAIToAnthropicRequest(nil, []byte(body), probeOptions)
		if err != nil {
			t.Fatal(err)
		}
		return lacks(out, marks...)
	}
}

// antProbe translates an Anthropic request and reports whether the output
// contains none of marks.
func antProbe(body string, marks ...string) func(t *testing.T) bool {
	return func(t *testing.T) bool {
		out, _, err := AnthropicToOpenAIRequest(nil, []byte(body), probeOptions)
		if err != nil {
			t.Fatal(err)
		}
		return lacks(out, marks...)
	}
}

func lacks(out []byte, marks ...string) bool {
	for _, m := range marks {
		if bytes.Contains(out, []byte(m)) {
			return false
		}
	}
	return true
}

func openAIAnthropicProbes() []lossProbe {
	return []lossProbe{
		{plan.CapStrictTools, oaiProbe(`}]}],"tools":[{"type":"function","function":{"name":"f","strict":true}}]}`, `"strict":true`)},
		{plan.CapStructuredOutput, oaiProbe(`}]}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`, `"format"`)},
		{plan.CapPromptCaching, oaiProbe(`,"prompt_cache_breakpoint":{"mode":"explicit"}}]}]}`, `"cache_control"`)},
		{plan.CapExtendedThinking, oaiProbe(`}]}],"reasoning_effort":"high"}`, `"thinking"`)},
		{plan.CapAudioInput, oaiProbe(`},{"type":"input_audio","input_audio":{"data":"QUFB","format":"wav"}}]}]}`, "QUFB")},
		{plan.CapMultiChoice, oaiProbe(`}]}],"n":2}`, `"n"`)},
		{plan.CapUsageDetails, func(t *testing.T) bool {
			out, _, err := AnthropicToOpenAIResponse([]byte(`{"type":"message","content":[],"usage":{"input_tokens":1,"cache_creation_input_tokens":7,"output_tokens":9,"output_tokens_details":{"thinking_tokens":4}}}`), "m")
			if err != nil {
				t.Fatal(err)
			}
			return lacks(out, "cache_write_tokens", "reasoning_tokens")
		}},
	}
}

// anthropicOpenAIProbes has no audio or multi-choice probe: an Anthropic
// request cannot ask for either.
func anthropicOpenAIProbes() []lossProbe {
	tools := `"tools":[{"name":"f","strict":true,"input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]`
	return []lossProbe{
		{plan.CapStrictTools, antProbe(`{"model":"m","max_tokens":5,"messages":[],`+tools+`}`, `"strict"`)},
		{plan.CapStructuredOutput, antProbe(`{"model":"m","max_tokens":5,"messages":[],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`, "response_format", "json_schema")},
		{plan.CapPromptCaching, antProbe(`{"model":"m","max_tokens":5,"cache_control":{"type":"ephemeral"},"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[],`+tools+`}`, "cache")},
		{plan.CapExtendedThinking, func(t *testing.T) bool {
			asked := antProbe(`{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[]}`, "reasoning_effort")(t)
			// An Anthropic client's thinking is the blocks it gets back: the
			// answer of an upstream that reasoned must carry one.
			out, _, err := OpenAIToAnthropicResponse([]byte(`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":4}}}`), "m")
			if err != nil {
				t.Fatal(err)
			}
			return asked || lacks(out, `"type":"thinking"`)
		}},
		{plan.CapUsageDetails, func(t *testing.T) bool {
			out, _, err := OpenAIToAnthropicResponse([]byte(`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":2,"cache_write_tokens":3},"completion_tokens_details":{"reasoning_tokens":4}}}`), "m")
			if err != nil {
				t.Fatal(err)
			}
			return lacks(out, "thinking_tokens", `"cache_creation_input_tokens":3`)
		}},
	}
}
