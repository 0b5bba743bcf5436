package caps

import (
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// messagesBody wraps extra top-level members in a minimal Messages request.
func messagesBody(extra string) string {
	return `{"model":"claude-x","max_tokens":1024,"messages":[{"role":"user","content":"hello"}]` + extra + `}`
}

const ephemeral = `"cache_control":{"type":"ephemeral","ttl":"5m"}`

var messagesCases = []capCase{
	{"plain", messagesBody(``), capsNone},

	// prompt_caching
	{"top-level cache_control", messagesBody(`,` + ephemeral), promptCaching},
	{"system block", messagesBody(`,"system":[{"type":"text","text":"you are helpful",` + ephemeral + `}]`), promptCaching},
	{"message block", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"long doc",` + ephemeral + `}]}]}`, promptCaching},
	{"tool", messagesBody(`,"tools":[{"name":"f","input_schema":{"type":"object"},` + ephemeral + `}]`), promptCaching},
	{"tool_result content", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r",` + ephemeral + `}]}]}]}`, promptCaching},
	{"cache_control null", messagesBody(`,"system":[{"type":"text","text":"s","cache_control":null}]`), capsNone},
	{"system string", `{"model":"m","max_tokens":9,"system":"cache_control","messages":[]}`, capsNone},
	{"in message text", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"set \"cache_control"}]}`, capsNone},
	{"in tool description", messagesBody(`,"tools":[{"name":"f","description":"cache_control","input_schema":{}}]`), capsNone},
	{"as schema property", messagesBody(`,"tools":[{"name":"f","input_schema":{"type":"object","properties":{"cache_control":{"type":"object"}}}}]`), capsNone},
	{"on message object", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"x",` + ephemeral + `}]}`, capsNone},
	{"in tool_use input", `{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{` + ephemeral + `}}]}]}`, capsNone},
	{"too deeply nested", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"content":[{"content":[{"content":[{` + ephemeral + `}]}]}]}]}]}`, capsNone},
	{"openai breakpoint", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"x","prompt_cache_breakpoint":{}}]}]}`, capsNone},

	// extended_thinking
	{"thinking enabled", messagesBody(`,"thinking":{"type":"enabled","budget_tokens":2048}`), thinking},
	{"thinking adaptive", messagesBody(`,"thinking":{"type":"adaptive"}`), thinking},
	{"thinking between tools", messagesBody(`,"thinking":{"display":"omitted","type":"between_tools"}`), thinking},
	{"thinking disabled", messagesBody(`,"thinking":{"type":"disabled"}`), capsNone},
	{"thinking unknown type", messagesBody(`,"thinking":{"type":"sometimes"}`), capsNone},
	{"thinking true", messagesBody(`,"thinking":true`), capsNone},
	{"thinking block in history", `{"model":"m","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"}]}]}`, capsNone},
	{"thinking in message text", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"thinking"}]}`, capsNone},

	// strict_tools
	{"strict tool", messagesBody(`,"tools":[{"name":"f","input_schema":{"type":"object"},"strict":true}]`), strictTools},
	{"strict false", messagesBody(`,"tools":[{"name":"f","input_schema":{},"strict":false}]`), capsNone},
	{"strict in input_schema", messagesBody(`,"tools":[{"name":"f","input_schema":{"type":"object","strict":true}}]`), capsNone},
	{"strict top level", messagesBody(`,"strict":true`), capsNone},
	{"strict and cached tool", messagesBody(`,"tools":[{"name":"f","input_schema":{},"strict":true,` + ephemeral + `}]`), strictTools | promptCaching},

	// structured_output
	{"output_config format", messagesBody(`,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}`), structured},
	{"output_config effort only", messagesBody(`,"output_config":{"effort":"high"}`), capsNone},
	{"output_config format null", messagesBody(`,"output_config":{"format":null}`), capsNone},
	{"beta output_format", messagesBody(`,"output_format":{"type":"json_schema","schema":{}}`), structured},
	{"format in metadata", messagesBody(`,"metadata":{"output_config":{"format":{"type":"json_schema"}}}`), capsNone},

	// not in this dialect, and malformed
	{"openai caps do not apply", messagesBody(`,"n":3,"reasoning_effort":"high","response_format":{"type":"json_object"}`), capsNone},
	{"input_audio does not apply", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, capsNone},
	{"every cap", messagesBody(`,"thinking":{"type":"adaptive"},"output_config":{"format":{"type":"json_schema","schema":{}}},"tools":[{"name":"f","input_schema":{},"strict":true}],` + ephemeral), everyAnthropic},
	{"malformed", messagesBody(`,"thinking":{"type":"enabled"`), capsNone},
}

func TestReadMessages(t *testing.T) { runCases(t, plan.RouteMessages, messagesCases) }
