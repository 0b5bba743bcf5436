package probe

import (
	"encoding/json"
	"fmt"

	"github.com/pistra/pistra/runtime/plan"
)

// The Anthropic dialect's calls, on Messages. Messages has no n and no
// audio parts, so multi_choice and audio_input are not probed there.

// messagesCacheTokens is the repeated prefix: past the largest minimum
// (4096 tokens) Anthropic caches from, whichever the model's is.
const messagesCacheTokens = 4300

// thinkingBudget is the smallest budget extended thinking takes.
const thinkingBudget = 1024

func messagesSuite(model string) suite {
	user := func(text string) []map[string]any { return []map[string]any{{"role": "user", "content": text}} }
	cached := body(map[string]any{"model": model, "max_tokens": 16, "messages": user(baselineText),
		"system": []any{map[string]any{"type": "text", "text": longPrefix(messagesCacheTokens), "cache_control": map[string]any{"type": "ephemeral"}}}})
	route := plan.RouteMessages
	return suite{
		calls: []Call{
			{callBaseline, route, body(map[string]any{"model": model, "max_tokens": baselineMaxTokens, "messages": user(baselineText)}), baselineMaxTokens},
			{callStrict, route, body(map[string]any{
				"model": model, "max_tokens": 128, "messages": user(toolPrompt),
				"tools":       []any{map[string]any{"name": toolName, "description": "Record the city the user names.", "input_schema": toolSchema, "strict": true}},
				"tool_choice": map[string]any{"type": "tool", "name": toolName},
			}), 128},
			{callStructured, route, body(map[string]any{
				"model": model, "max_tokens": 128, "messages": user(answerPrompt),
				"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": answerSchema}},
			}), 128},
			{callCacheFirst, route, cached, 16},
			{callCacheRepeat, route, cached, 16},
			{callThinking, route, body(map[string]any{"model": model, "max_tokens": thinkingBudget + 256, "messages": user(baselineText),
				"thinking": map[string]any{"type": "enabled", "budget_tokens": thinkingBudget}}), thinkingBudget + 256},
		},
		judges: []judge{
			{plan.CapStrictTools, messagesStrict},
			{plan.CapStructuredOutput, messagesStructured},
			{plan.CapPromptCaching, messagesCaching},
			{plan.CapExtendedThinking, messagesThinking},
			{plan.CapUsageDetails, messagesDetails},
		},
	}
}

// messageAnswer is what the judges read of a message.
type messageAnswer struct {
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	Usage *struct {
		InputTokens              int  `json:"input_tokens"`
		CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// readMessage decodes the named answer; on failure the finding says why.
func readMessage(got answers, name string) (*messageAnswer, Finding, bool) {
	var m messageAnswer
	if why, ok := decode(got[name], &m); !ok {
		return nil, Finding{Evidence: why + ": dropped"}, false
	}
	return &m, Finding{}, true
}

func messagesStrict(got answers) Finding {
	m, f, ok := readMessage(got, callStrict)
	if !ok {
		return f
	}
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			return judgeArguments(b.Name, string(b.Input), true)
		}
	}
	return judgeArguments("", "", false)
}

func messagesStructured(got answers) Finding {
	m, f, ok := readMessage(got, callStructured)
	if !ok {
		return f
	}
	text := ""
	for _, b := range m.Content {
		if b.Type == "text" {
			text += b.Text
		}
	}
	return judgeAnswer(text)
}

func messagesCaching(got answers) Finding {
	m, f, ok := readMessage(got, callCacheRepeat)
	if !ok {
		return f
	}
	switch {
	case m.Usage == nil || m.Usage.CacheReadInputTokens == nil:
		return Finding{Evidence: "usage has no cache_read_input_tokens, so no cache read can show: dropped"}
	case *m.Usage.CacheReadInputTokens == 0:
		return Finding{Evidence: "a repeated prefix marked cache_control read 0 cached tokens: dropped"}
	}
	return Finding{Honoured: true, Evidence: fmt.Sprintf("a repeated prefix marked cache_control read %d cached tokens", *m.Usage.CacheReadInputTokens)}
}

func messagesThinking(got answers) Finding {
	m, f, ok := readMessage(got, callThinking)
	if !ok {
		return f
	}
	for _, b := range m.Content {
		if b.Type == "thinking" || b.Type == "redacted_thinking" {
			return Finding{Honoured: true, Evidence: "thinking enabled answered with a " + b.Type + " block"}
		}
	}
	return Finding{Evidence: "thinking enabled answered with no thinking block: ignored, dropped"}
}

func messagesDetails(got answers) Finding {
	m, f, ok := readMessage(got, callBaseline)
	if !ok {
		return f
	}
	if m.Usage == nil || m.Usage.CacheCreationInputTokens == nil || m.Usage.CacheReadInputTokens == nil {
		return Finding{Evidence: "usage has no cache_creation_input_tokens and cache_read_input_tokens counts: dropped"}
	}
	return Finding{Honoured: true, Evidence: "usage reports cache_creation_input_tokens and cache_read_input_tokens"}
}
