package caps

import (
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// chatBody wraps extra top-level members in a minimal chat request.
func chatBody(extra string) string {
	return `{"model":"gpt-x","messages":[{"role":"user","content":"hello"}]` + extra + `}`
}

const weatherFn = `"name":"get_weather","description":"Look up weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}`

var chatCases = []capCase{
	{"plain", chatBody(``), capsNone},
	{"empty object", `{}`, capsNone},

	// strict_tools
	{"strict tool", chatBody(`,"tools":[{"type":"function","function":{` + weatherFn + `,"strict":true}}]`), strictTools},
	{"strict on second tool", chatBody(`,"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b","strict":true}}]`), strictTools},
	{"strict before name", chatBody(`,"tools":[{"function":{"strict":true,"name":"a"},"type":"function"}]`), strictTools},
	{"strict false", chatBody(`,"tools":[{"type":"function","function":{` + weatherFn + `,"strict":false}}]`), capsNone},
	{"strict as string", chatBody(`,"tools":[{"type":"function","function":{"name":"a","strict":"true"}}]`), capsNone},
	{"strict null", chatBody(`,"tools":[{"type":"function","function":{"name":"a","strict":null}}]`), capsNone},
	{"tools not an array", chatBody(`,"tools":{"type":"function","function":{"name":"a","strict":true}}`), capsNone},
	{"tool not an object", chatBody(`,"tools":["strict",true]`), capsNone},
	{"strict flat on tool", chatBody(`,"tools":[{"type":"function","strict":true,"function":{"name":"a"}}]`), capsNone},
	{"strict top level", chatBody(`,"strict":true`), capsNone},
	{"strict as schema property", chatBody(`,"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"strict":{"type":"boolean"}},"strict":true}}}]`), capsNone},
	{"strict in message text", `{"model":"m","messages":[{"role":"user","content":"answer \"strict\": true, be \"strict"}]}`, capsNone},
	{"strict as message text", `{"model":"m","messages":[{"role":"user","content":"strict"}]}`, capsNone},
	{"strict in tool description", chatBody(`,"tools":[{"type":"function","function":{"name":"a","description":"strict"}}]`), capsNone},
	{"strict key in content part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x","strict":true}]}]}`, capsNone},
	{"strict under response_format", chatBody(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{},"strict":true}}`), structured},

	// structured_output
	{"json_schema", chatBody(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}`), structured},
	{"json_object", chatBody(`,"response_format":{"type":"json_object"}`), structured},
	{"type after schema", chatBody(`,"response_format":{"json_schema":{"name":"x"},"type":"json_schema"}`), structured},
	{"text format", chatBody(`,"response_format":{"type":"text"}`), capsNone},
	{"response_format string", chatBody(`,"response_format":"json_schema"`), capsNone},
	{"response_format null", chatBody(`,"response_format":null`), capsNone},
	{"json type nested deeper", chatBody(`,"response_format":{"type":"text","json_schema":{"type":"json_schema"}}`), capsNone},
	{"json_schema in message", `{"model":"m","messages":[{"role":"user","content":"json_schema"}]}`, capsNone},
	{"text.format is responses-only", chatBody(`,"text":{"format":{"type":"json_schema"}}`), capsNone},

	// prompt_caching
	{"prompt_cache_key", chatBody(`,"prompt_cache_key":"tenant-7"`), promptCaching},
	{"prompt_cache_retention", chatBody(`,"prompt_cache_retention":"24h"`), promptCaching},
	{"prompt_cache_options", chatBody(`,"prompt_cache_options":{}`), promptCaching},
	{"prompt_cache_key null", chatBody(`,"prompt_cache_key":null`), capsNone},
	{"prompt_cache_key empty", chatBody(`,"prompt_cache_key":""`), capsNone},
	{"thinking extension", chatBody(`,"thinking":{"type":"enabled","budget_tokens":2048}`), plan.Of(plan.CapExtendedThinking)},
	{"thinking extension disabled", chatBody(`,"thinking":{"type":"disabled"}`), capsNone},
	{"thinking in message text", chatBody(`,"metadata":{"note":"\"thinking\":{\"type\":\"enabled\"}"}`), capsNone},
	{"prompt_cache_retention", chatBody(`,"prompt_cache_retention":"24h"`), promptCaching},
	{"breakpoint on part", `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"long","prompt_cache_breakpoint":{"mode":"explicit"}}]}]}`, promptCaching},
	{"breakpoint null", `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"long","prompt_cache_breakpoint":null}]}]}`, capsNone},
	{"breakpoint on message", `{"model":"m","messages":[{"role":"user","content":"x","prompt_cache_breakpoint":{"mode":"explicit"}}]}`, capsNone},
	{"cache key in metadata", chatBody(`,"metadata":{"prompt_cache_key":"k"}`), capsNone},
	{"cache_control is anthropic", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}`, capsNone},

	// extended_thinking
	{"reasoning high", chatBody(`,"reasoning_effort":"high"`), thinking},
	{"reasoning minimal", chatBody(`,"reasoning_effort":"minimal"`), thinking},
	{"reasoning none", chatBody(`,"reasoning_effort":"none"`), capsNone},
	{"reasoning null", chatBody(`,"reasoning_effort":null`), capsNone},
	{"reasoning number", chatBody(`,"reasoning_effort":3`), capsNone},
	{"reasoning in metadata", chatBody(`,"metadata":{"reasoning_effort":"high"}`), capsNone},

	// audio_input
	{"input_audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]}]}`, audioInput},
	{"audio output only", chatBody(`,"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}`), capsNone},
	{"input_audio as text", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"input_audio"}]}]}`, capsNone},
	{"input_audio on message", `{"model":"m","messages":[{"role":"user","type":"input_audio","content":"x"}]}`, capsNone},
	{"input_audio key without type", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","input_audio":{"data":"AA=="}}]}]}`, capsNone},

	// multi_choice
	{"n 2", chatBody(`,"n":2`), multiChoice},
	{"n 10", chatBody(`,"n":10`), multiChoice},
	{"n exponent", chatBody(`,"n":0.2e1`), multiChoice},
	{"n 1", chatBody(`,"n":1`), capsNone},
	{"n 1.0", chatBody(`,"n":1.0`), capsNone},
	{"n 0", chatBody(`,"n":0`), capsNone},
	{"n negative", chatBody(`,"n":-3`), capsNone},
	{"n string", chatBody(`,"n":"2"`), capsNone},
	{"n in message", `{"model":"m","messages":[{"role":"user","content":"n","n":2}]}`, capsNone},
	{"n in metadata", chatBody(`,"metadata":{"n":2}`), capsNone},

	// everything, and bodies that cannot be confirmed
	{"every cap", `{"model":"m","n":3,"reasoning_effort":"low","prompt_cache_key":"k",` +
		`"response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"f","strict":true}}],` +
		`"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"mp3"}}]}]}`, everyChatCap},
	{"duplicate key any counts", chatBody(`,"n":2,"n":1`), multiChoice},
	{"whitespace everywhere", " {\n \"n\" :\t2 ,\r\n \"messages\" : [ ] } \n", multiChoice},
	{"truncated", `{"model":"m","n":2,"messages":[`, capsNone},
	{"trailing garbage", chatBody(`,"n":2`) + `x`, capsNone},
	{"two objects", chatBody(`,"n":2`) + `{}`, capsNone},
	{"missing comma", `{"n":2 "model":"m"}`, capsNone},
	{"trailing comma", `{"n":2,}`, capsNone},
	{"leading comma", `{,"n":2}`, capsNone},
	{"unquoted key", `{n:2}`, capsNone},
	{"top-level array", `[{"n":2}]`, capsNone},
	{"bad literal", `{"n":2,"stream":tru}`, capsNone},
	{"bad number", `{"n":2,"temperature":01}`, capsNone},
	{"unterminated string", `{"n":2,"model":"m}`, capsNone},
	{"mismatched brackets", `{"n":2,"messages":[}`, capsNone},
	{"empty", ``, capsNone},
}

func TestReadChatCompletions(t *testing.T) { runCases(t, plan.RouteChatCompletions, chatCases) }

var completionsCases = []capCase{
	{"plain", `{"model":"m","prompt":"once upon"}`, capsNone},
	{"n 2", `{"model":"m","prompt":"x","n":2}`, multiChoice},
	{"best_of 3", `{"model":"m","prompt":"x","best_of":3}`, multiChoice},
	{"n 1 best_of 1", `{"model":"m","prompt":"x","n":1,"best_of":1}`, capsNone},
	{"n as prompt", `{"model":"m","prompt":["n","best_of"]}`, capsNone},
	{"best_of string", `{"model":"m","prompt":"x","best_of":"4"}`, capsNone},
	{"chat caps do not apply", `{"model":"m","prompt":"x","reasoning_effort":"high","response_format":{"type":"json_object"},"prompt_cache_key":"k"}`, capsNone},
	{"truncated", `{"model":"m","n":2,"prompt":"x`, capsNone},
}

func TestReadCompletions(t *testing.T) { runCases(t, plan.RouteCompletions, completionsCases) }
