package translate

import (
	"testing"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// requestProbe translates body with request and reports whether the output
// contains none of marks.
func requestProbe(request func(dst, body []byte, o Options) ([]byte, bool, error), body string, marks ...string) func(t *testing.T) bool {
	return func(t *testing.T) bool {
		out, _, err := request(nil, []byte(body), probeOptions)
		if err != nil {
			t.Fatal(err)
		}
		return lacks(out, marks...)
	}
}

// answerProbe translates an answer with response and reports whether the
// output lacks any of marks: every split must survive for usage_details.
func answerProbe(response func([]byte, string) ([]byte, meter.Usage, error), body string, marks ...string) func(t *testing.T) bool {
	return func(t *testing.T) bool {
		out, _, err := response([]byte(body), "m")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range marks {
			if lacks(out, m) {
				return true
			}
		}
		return false
	}
}

func responsesRequest(dst, body []byte, o Options) ([]byte, bool, error) {
	var custom []string
	return ResponsesToAnthropicRequest(dst, body, o, &custom)
}

func noCustomTools(string) bool { return false }

// responsesAnthropicProbes has no multi-choice probe: a Responses request
// cannot ask for more than one answer.
func responsesAnthropicProbes() []lossProbe {
	in := func(rest string) string {
		return `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"` + rest
	}
	return []lossProbe{
		{plan.CapStrictTools, requestProbe(responsesRequest, in(`}]}],"tools":[{"type":"function","name":"f","strict":true}]}`), `"strict":true`)},
		{plan.CapStructuredOutput, requestProbe(responsesRequest, in(`}]}],"text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}}`), `"format"`)},
		{plan.CapPromptCaching, requestProbe(responsesRequest, in(`,"prompt_cache_breakpoint":{}}]}]}`), `"cache_control"`)},
		{plan.CapExtendedThinking, requestProbe(responsesRequest, in(`}]}],"reasoning":{"effort":"high"}}`), `"thinking"`)},
		{plan.CapAudioInput, requestProbe(responsesRequest, in(`},{"type":"input_audio","input_audio":{"data":"QUFB","format":"wav"}}]}]}`), "QUFB")},
		{plan.CapUsageDetails, answerProbe(func(b []byte, m string) ([]byte, meter.Usage, error) {
			return AnthropicToResponsesResponse(b, m, noCustomTools)
		}, `{"type":"message","content":[],"usage":{"input_tokens":1,"cache_creation_input_tokens":7,"output_tokens":9,"output_tokens_details":{"thinking_tokens":4}}}`,
			`"cache_write_tokens":7`, `"reasoning_tokens":4`)},
	}
}

// anthropicResponsesProbes has no audio or multi-choice probe: an
// Anthropic request cannot ask for either.
func anthropicResponsesProbes() []lossProbe {
	tools := `"tools":[{"name":"f","strict":true,"input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]`
	return []lossProbe{
		{plan.CapStrictTools, requestProbe(AnthropicToResponsesRequest, `{"model":"m","max_tokens":5,"messages":[],`+tools+`}`, `"strict":true`)},
		{plan.CapStructuredOutput, requestProbe(AnthropicToResponsesRequest, `{"model":"m","max_tokens":5,"messages":[],"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`, "json_schema")},
		{plan.CapPromptCaching, requestProbe(AnthropicToResponsesRequest, `{"model":"m","max_tokens":5,"cache_control":{"type":"ephemeral"},"messages":[],`+tools+`}`, "cache")},
		{plan.CapExtendedThinking, requestProbe(AnthropicToResponsesRequest, `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[]}`, `"reasoning"`)},
		{plan.CapUsageDetails, answerProbe(ResponsesToAnthropicResponse,
			`{"object":"response","status":"completed","output":[],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":2,"cache_write_tokens":3},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":4}}}`,
			`"thinking_tokens":4`, `"cache_creation_input_tokens":3`)},
	}
}
