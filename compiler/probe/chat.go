package probe

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"github.com/pistra/pistra/runtime/plan"
)

// The OpenAI dialect's calls, on Chat Completions, each written the way
// pistra's capability reader counts as using its capability.

// chatCacheTokens is the repeated prefix: past the 1024 tokens OpenAI
// caches from.
const chatCacheTokens = 1300

func chatSuite(model string) suite {
	user := func(content any) []map[string]any { return []map[string]any{{"role": "user", "content": content}} }
	plain := func(extra map[string]any) []byte {
		b := map[string]any{"model": model, "messages": user(baselineText), "max_completion_tokens": baselineMaxTokens}
		for k, v := range extra {
			b[k] = v
		}
		return body(b)
	}
	prefix := []map[string]any{{"role": "system", "content": longPrefix(chatCacheTokens)}, {"role": "user", "content": baselineText}}
	cached := body(map[string]any{"model": model, "messages": prefix, "max_completion_tokens": 16, "prompt_cache_key": "pistra-probe"})
	route := plan.RouteChatCompletions
	return suite{
		calls: []Call{
			{callBaseline, route, plain(nil), baselineMaxTokens},
			{callStrict, route, body(map[string]any{
				"model": model, "messages": user(toolPrompt), "max_completion_tokens": 128,
				"tools": []any{map[string]any{"type": "function", "function": map[string]any{
					"name": toolName, "description": "Record the city the user names.", "parameters": toolSchema, "strict": true}}},
				"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": toolName}},
			}), 128},
			{callStructured, route, body(map[string]any{
				"model": model, "messages": user(answerPrompt), "max_completion_tokens": 128,
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
					"name": "greeting", "schema": answerSchema, "strict": true}},
			}), 128},
			{callCacheFirst, route, cached, 16},
			{callCacheRepeat, route, cached, 16},
			{callChoices, route, body(map[string]any{"model": model, "messages": user(baselineText), "max_completion_tokens": 16, "n": 2}), 32},
			{callAudio, route, plain(map[string]any{"messages": user([]any{
				map[string]any{"type": "text", "text": baselineText},
				map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": silentWAV(), "format": "wav"}},
			})}), baselineMaxTokens},
			{callThinking, route, plain(map[string]any{"reasoning_effort": "low"}), baselineMaxTokens},
		},
		judges: []judge{
			{plan.CapStrictTools, chatStrict},
			{plan.CapStructuredOutput, chatStructured},
			{plan.CapPromptCaching, chatCaching},
			{plan.CapExtendedThinking, chatThinking},
			{plan.CapUsageDetails, chatDetails},
			{plan.CapAudioInput, chatAudio},
			{plan.CapMultiChoice, chatChoices},
		},
	}
}

// chatAnswer is what the judges read of a chat completion.
type chatAnswer struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
			AudioTokens  *int `json:"audio_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens *int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

// readChat decodes the named answer; on failure the finding says why.
func readChat(got answers, name string) (*chatAnswer, Finding, bool) {
	var c chatAnswer
	if why, ok := decode(got[name], &c); !ok {
		return nil, Finding{Evidence: why + ": dropped"}, false
	}
	if c.Usage == nil {
		return nil, Finding{Evidence: "the answer reports no usage at all: dropped"}, false
	}
	return &c, Finding{}, true
}

func (c *chatAnswer) cached() *int {
	if d := c.Usage.PromptTokensDetails; d != nil {
		return d.CachedTokens
	}
	return nil
}

func (c *chatAnswer) audio() *int {
	if d := c.Usage.PromptTokensDetails; d != nil {
		return d.AudioTokens
	}
	return nil
}

func (c *chatAnswer) reasoning() *int {
	if d := c.Usage.CompletionTokensDetails; d != nil {
		return d.ReasoningTokens
	}
	return nil
}

func chatStrict(got answers) Finding {
	var c chatAnswer
	if why, ok := decode(got[callStrict], &c); !ok {
		return Finding{Evidence: why + ": dropped"}
	}
	if len(c.Choices) == 0 || len(c.Choices[0].Message.ToolCalls) == 0 {
		return judgeArguments("", "", false)
	}
	f := c.Choices[0].Message.ToolCalls[0].Function
	return judgeArguments(f.Name, f.Arguments, true)
}

func chatStructured(got answers) Finding {
	var c chatAnswer
	if why, ok := decode(got[callStructured], &c); !ok {
		return Finding{Evidence: why + ": dropped"}
	}
	if len(c.Choices) == 0 || c.Choices[0].Message.Content == nil {
		return Finding{Evidence: "no answer text: dropped"}
	}
	return judgeAnswer(*c.Choices[0].Message.Content)
}

func chatCaching(got answers) Finding {
	c, f, ok := readChat(got, callCacheRepeat)
	if !ok {
		return f
	}
	n := c.cached()
	switch {
	case n == nil:
		return Finding{Evidence: "usage has no cached_tokens, so no cache read can show: dropped"}
	case *n == 0:
		return Finding{Evidence: fmt.Sprintf("a repeated %d-token prefix read 0 cached tokens: dropped", c.Usage.PromptTokens)}
	}
	return Finding{Honoured: true, Evidence: fmt.Sprintf("a repeated %d-token prefix read %d cached tokens", c.Usage.PromptTokens, *n)}
}

func chatDetails(got answers) Finding {
	c, f, ok := readChat(got, callBaseline)
	if !ok {
		return f
	}
	switch {
	case c.cached() == nil:
		return Finding{Evidence: "usage has no prompt_tokens_details.cached_tokens: dropped"}
	case c.reasoning() == nil:
		return Finding{Evidence: "usage has no completion_tokens_details.reasoning_tokens: dropped"}
	}
	return Finding{Honoured: true, Evidence: "usage reports prompt_tokens_details.cached_tokens and completion_tokens_details.reasoning_tokens"}
}

// billing is a capability shown by the tokens billed for it: itemised in
// usage, or else the growth of a total over the baseline, whose words the
// call repeats.
type billing struct {
	call, asked string
	// itemised is the count usage itemises, nil when it has none.
	itemised     func(*chatAnswer) *int
	unit         string
	total        func(*chatAnswer) int
	totalUnit    string
	whenNotShown string
}

func (b billing) judge(got answers) Finding {
	c, f, ok := readChat(got, b.call)
	if !ok {
		return f
	}
	if n := b.itemised(c); n != nil {
		if *n == 0 {
			return Finding{Evidence: fmt.Sprintf("%s was billed 0 %s: %s, dropped", b.asked, b.unit, b.whenNotShown)}
		}
		return Finding{Honoured: true, Evidence: fmt.Sprintf("%s was billed %d %s", b.asked, *n, b.unit)}
	}
	base, f, ok := readChat(got, callBaseline)
	if !ok {
		return f
	}
	if grew := b.total(c) - b.total(base); grew > 0 {
		return Finding{Honoured: true, Evidence: fmt.Sprintf("%s added %d %s to the same words", b.asked, grew, b.totalUnit)}
	}
	return Finding{Evidence: fmt.Sprintf("%s added no %s: %s, dropped", b.asked, b.totalUnit, b.whenNotShown)}
}

var (
	chatAudio = billing{call: callAudio, asked: "the audio part", itemised: (*chatAnswer).audio, unit: "audio tokens",
		total: func(c *chatAnswer) int { return c.Usage.PromptTokens }, totalUnit: "prompt tokens", whenNotShown: "stripped unheard"}.judge
	chatThinking = billing{call: callThinking, asked: "reasoning_effort low", itemised: (*chatAnswer).reasoning, unit: "reasoning tokens",
		total: func(c *chatAnswer) int { return c.Usage.CompletionTokens }, totalUnit: "completion tokens", whenNotShown: "ignored"}.judge
)

func chatChoices(got answers) Finding {
	var c chatAnswer
	if why, ok := decode(got[callChoices], &c); !ok {
		return Finding{Evidence: "n=2 " + why + ": dropped"}
	}
	if len(c.Choices) != 2 {
		return Finding{Evidence: fmt.Sprintf("n=2 answered %d choice(s): dropped", len(c.Choices))}
	}
	return Finding{Honoured: true, Evidence: "n=2 answered 2 choices"}
}

// silentWAV is a tenth of a second of 16 kHz mono silence as a WAV file,
// base64: the smallest honest audio part.
func silentWAV() string {
	const rate, samples = 16000, 1600
	data := samples * 2
	h := make([]byte, 44+data)
	copy(h, "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+data))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16) // PCM header size
	binary.LittleEndian.PutUint16(h[20:], 1)  // PCM
	binary.LittleEndian.PutUint16(h[22:], 1)  // mono
	binary.LittleEndian.PutUint32(h[24:], rate)
	binary.LittleEndian.PutUint32(h[28:], rate*2) // bytes a second
	binary.LittleEndian.PutUint16(h[32:], 2)      // bytes a frame
	binary.LittleEndian.PutUint16(h[34:], 16)     // bits a sample
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(data))
	return base64.StdEncoding.EncodeToString(h)
}
