package caps

import (
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// responsesBody wraps extra top-level members in a minimal Responses request.
func responsesBody(extra string) string {
	return `{"model":"gpt-x","input":"hello"` + extra + `}`
}

var responsesCases = []capCase{
	{"plain", responsesBody(``), capsNone},

	// strict_tools: flat function tools
	{"strict function tool", responsesBody(`,"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":true}]`), strictTools},
	{"strict before type", responsesBody(`,"tools":[{"strict":true,"name":"f","type":"function"}]`), strictTools},
	{"strict on second tool", responsesBody(`,"tools":[{"type":"web_search"},{"type":"function","name":"f","strict":true}]`), strictTools},
	{"strict false", responsesBody(`,"tools":[{"type":"function","name":"f","strict":false}]`), capsNone},
	{"strict on custom tool", responsesBody(`,"tools":[{"type":"custom","name":"f","strict":true}]`), capsNone},
	{"strict without type", responsesBody(`,"tools":[{"name":"f","strict":true}]`), capsNone},
	{"type and strict on different tools", responsesBody(`,"tools":[{"type":"function","name":"f"},{"type":"custom","strict":true}]`), capsNone},
	{"chat-shaped tool", responsesBody(`,"tools":[{"type":"function","function":{"name":"f","strict":true}}]`), capsNone},
	{"strict as string", responsesBody(`,"tools":[{"type":"function","name":"f","strict":"true"}]`), capsNone},
	{"strict in input text", `{"model":"m","input":"strict"}`, capsNone},
	{"strict under text.format", responsesBody(`,"text":{"format":{"type":"json_schema","name":"x","schema":{},"strict":true}}`), structured},

	// structured_output: text.format
	{"json_schema", responsesBody(`,"text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}},"verbosity":"low"}`), structured},
	{"json_object", responsesBody(`,"text":{"format":{"type":"json_object"}}`), structured},
	{"text format", responsesBody(`,"text":{"format":{"type":"text"}}`), capsNone},
	{"type directly under text", responsesBody(`,"text":{"type":"json_schema"}`), capsNone},
	{"chat response_format", responsesBody(`,"response_format":{"type":"json_schema"}`), capsNone},
	{"json_schema in input", `{"model":"m","input":[{"role":"user","content":"json_schema"}]}`, capsNone},

	// prompt_caching
	{"prompt_cache_key", responsesBody(`,"prompt_cache_key":"k"`), promptCaching},
	{"prompt_cache_retention", responsesBody(`,"prompt_cache_retention":"in_memory"`), promptCaching},
	{"prompt_cache_options", responsesBody(`,"prompt_cache_options":{"mode":"explicit"}`), promptCaching},
	{"prompt_cache_key null", responsesBody(`,"prompt_cache_key":null`), capsNone},
	{"breakpoint on input part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x","prompt_cache_breakpoint":{"mode":"explicit"}}]}]}`, promptCaching},
	{"breakpoint on tool output part", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x","prompt_cache_breakpoint":{}}]}]}`, promptCaching},
	{"cache key in prompt", responsesBody(`,"prompt":{"id":"p","variables":{"prompt_cache_key":"k"}}`), capsNone},

	// extended_thinking
	{"reasoning effort", responsesBody(`,"reasoning":{"effort":"medium","summary":"auto"}`), thinking},
	{"reasoning effort none", responsesBody(`,"reasoning":{"effort":"none"}`), capsNone},
	{"reasoning effort null", responsesBody(`,"reasoning":{"effort":null}`), capsNone},
	{"reasoning summary only", responsesBody(`,"reasoning":{"summary":"auto"}`), capsNone},
	{"reasoning null", responsesBody(`,"reasoning":null`), capsNone},
	{"chat reasoning_effort", responsesBody(`,"reasoning_effort":"high"`), capsNone},
	{"effort in input item", `{"model":"m","input":[{"type":"reasoning","id":"r","summary":[],"effort":"high"}]}`, capsNone},

	// audio_input
	{"input_audio part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`, audioInput},
	{"input_audio as text", `{"model":"m","input":"input_audio"}`, capsNone},
	{"input_audio as item type", `{"model":"m","input":[{"type":"input_audio","input_audio":{"data":"AA=="}}]}`, capsNone},

	// not in this dialect
	{"n does not apply", responsesBody(`,"n":4`), capsNone},
	{"malformed", responsesBody(`,"reasoning":{"effort":"high"`), capsNone},
}

func TestReadResponses(t *testing.T) { runCases(t, plan.RouteResponses, responsesCases) }
