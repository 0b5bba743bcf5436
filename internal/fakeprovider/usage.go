package fakeprovider

// openAIUsage is the token accounting of an OpenAI-dialect answer. Cached
// tokens are part of prompt, reasoning tokens part of completion, as OpenAI
// counts them.
type openAIUsage struct {
	prompt, cached, completion, reasoning int
}

func newOpenAIUsage(textBytes int) openAIUsage {
	p := promptTokens(textBytes)
	return openAIUsage{prompt: p, cached: openAICachedTokens(p)}
}

// appendChatUsage writes Chat Completions usage; details adds the
// prompt/completion breakdowns, which legacy completions do not carry.
func appendChatUsage(b []byte, u openAIUsage, details bool) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, u.prompt)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, u.completion)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, u.prompt+u.completion)
	if details {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, u.cached)
		b = append(b, `,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":`...)
		b = appendInt(b, u.reasoning)
		b = append(b, `,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}`...)
	}
	return append(b, '}')
}

// appendResponsesUsage writes Responses API usage.
func appendResponsesUsage(b []byte, u openAIUsage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.prompt)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, u.cached)
	b = append(b, `},"output_tokens":`...)
	b = appendInt(b, u.completion)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, u.reasoning)
	b = append(b, `},"total_tokens":`...)
	b = appendInt(b, u.prompt+u.completion)
	return append(b, '}')
}

// anthropicUsage is the token accounting of an Anthropic answer. Unlike
// OpenAI, input excludes the cache reads and writes; output includes thinking.
type anthropicUsage struct {
	input, cacheCreation, cacheRead, output, thinking int
}

// newAnthropicUsage splits a prompt of textBytes. When the request marks
// anything with cache_control the fake reports both a cache read and a cache
// write, as if part of the prefix had been cached before and the rest was
// cached now, so one request shows every field.
func newAnthropicUsage(textBytes int, cacheControl bool) anthropicUsage {
	p := promptTokens(textBytes)
	if !cacheControl {
		return anthropicUsage{input: p}
	}
	p = max(p, 3)
	read := p / 2
	creation := max(p/4, 1)
	return anthropicUsage{input: p - read - creation, cacheCreation: creation, cacheRead: read}
}

// appendAnthropicUsage writes Anthropic usage: final with the output count
// and its thinking share, otherwise with message_start's placeholder of one
// output token.
func appendAnthropicUsage(b []byte, u anthropicUsage, final bool) []byte {
	output := 1
	if final {
		output = u.output
	}
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.input)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = appendInt(b, u.cacheCreation)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = appendInt(b, u.cacheRead)
	b = append(b, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
	b = appendInt(b, u.cacheCreation)
	b = append(b, `,"ephemeral_1h_input_tokens":0},"output_tokens":`...)
	b = appendInt(b, output)
	if final && u.thinking > 0 {
		b = append(b, `,"output_tokens_details":{"thinking_tokens":`...)
		b = appendInt(b, u.thinking)
		b = append(b, '}')
	}
	return append(b, `,"service_tier":"standard"}`...)
}
