package fakeprovider

// openAIUsage is the token accounting of an OpenAI-dialect answer. Cached
// and audio tokens are part of prompt, reasoning tokens part of completion,
// as OpenAI counts them.
type openAIUsage struct {
	prompt, cached, audio, completion, reasoning int
}

// heard adds the audio of base64Bytes of input_audio data to the prompt, at
// a token per 64 base64 characters (a made-up rate: the real ones are per
// second of sound).
func (u *openAIUsage) heard(base64Bytes int) {
	if base64Bytes > 0 {
		u.audio = max(1, base64Bytes/64)
		u.prompt += u.audio
	}
}

// newOpenAIUsage counts a prompt of textBytes. split reports a cache hit on
// short prompts too: half the prompt, as if a shorter request had warmed it.
func newOpenAIUsage(textBytes int, split bool) openAIUsage {
	p := promptTokens(textBytes)
	cached := openAICachedTokens(p)
	if split && cached == 0 {
		p = max(p, 2)
		cached = p / 2
	}
	return openAIUsage{prompt: p, cached: cached}
}

// splitReasoningTokens is the reasoning the split mode bills a request that
// asked for none: a little, so that it does not eat small token limits.
const splitReasoningTokens = 4

// reasoningBudget returns the hidden reasoning an OpenAI answer bills for
// effort and what remains of limit for the visible answer (limit < 0: no
// limit), which reasoning comes out of first.
func (u Usage) reasoningBudget(effort string, limit int) (reasoning, rest int) {
	reasoning = reasoningTokens(effort)
	if reasoning == 0 && u.Split {
		reasoning = splitReasoningTokens
	}
	if limit >= 0 {
		reasoning = min(reasoning, limit)
		limit -= reasoning
	}
	return reasoning, limit
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
		b = append(b, `,"audio_tokens":`...)
		b = appendInt(b, u.audio)
		b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
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
	// plain writes the input and output counts alone, as a server dropping
	// usage_details does: no cache fields, no output details.
	plain bool
}

// newAnthropicUsage splits a prompt of textBytes. When the request marks
// anything with cache_control, or split asks for it, the fake reports both a
// cache read and a cache write, as if part of the prefix had been cached
// before and the rest was cached now, so one request shows every field.
func newAnthropicUsage(textBytes int, cached bool) anthropicUsage {
	p := promptTokens(textBytes)
	if !cached {
		return anthropicUsage{input: p}
	}
	p = max(p, 3)
	read := p / 2
	creation := max(p/4, 1)
	return anthropicUsage{input: p - read - creation, cacheCreation: creation, cacheRead: read}
}

// Anthropic usage comes in three shapes.
type anthropicUsageShape int

const (
	// usageMessage is a message's: the counts, the cache split by TTL and
	// the service tier.
	usageMessage anthropicUsageShape = iota
	// usageStart is message_start's: the message's with a placeholder of
	// one output token.
	usageStart
	// usageDelta is message_delta's: the cumulative counts alone.
	usageDelta
)

// appendAnthropicUsage writes Anthropic usage in one of its shapes; the
// thinking share of the output appears once the output count is final.
func appendAnthropicUsage(b []byte, u anthropicUsage, shape anthropicUsageShape) []byte {
	output := u.output
	if shape == usageStart {
		output = 1
	}
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.input)
	if !u.plain {
		b = append(b, `,"cache_creation_input_tokens":`...)
		b = appendInt(b, u.cacheCreation)
		b = append(b, `,"cache_read_input_tokens":`...)
		b = appendInt(b, u.cacheRead)
	}
	if shape != usageDelta && !u.plain {
		b = append(b, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
		b = appendInt(b, u.cacheCreation)
		b = append(b, `,"ephemeral_1h_input_tokens":0}`...)
	}
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, output)
	if shape != usageStart && u.thinking > 0 && !u.plain {
		b = append(b, `,"output_tokens_details":{"thinking_tokens":`...)
		b = appendInt(b, u.thinking)
		b = append(b, '}')
	}
	if shape == usageDelta {
		return append(b, '}')
	}
	return append(b, `,"service_tier":"standard"}`...)
}
