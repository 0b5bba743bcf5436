package translate

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/pistra/pistra/runtime/meter"
)

// The OpenAI Chat Completions shapes, reduced to the fields the translators
// read or write. Unknown fields are dropped by decoding, which is how the
// fields listed in each pair's comment disappear.

type oaiRequest struct {
	Model               string            `json:"model"`
	Messages            []oaiMessage      `json:"messages"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int64            `json:"max_tokens,omitempty"`
	Stop                json.RawMessage   `json:"stop,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	TopP                *float64          `json:"top_p,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *oaiStreamOptions `json:"stream_options,omitempty"`
	Tools               []oaiTool         `json:"tools,omitempty"`
	ToolChoice          json.RawMessage   `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls,omitempty"`
	User                string            `json:"user,omitempty"`
	ReasoningEffort     string            `json:"reasoning_effort,omitempty"`

	// Read on the way to Anthropic only.
	ResponseFormat       *oaiResponseFormat `json:"response_format,omitempty"`
	SafetyIdentifier     string             `json:"safety_identifier,omitempty"`
	PromptCacheKey       string             `json:"prompt_cache_key,omitempty"`
	PromptCacheRetention string             `json:"prompt_cache_retention,omitempty"`
	PromptCacheOptions   *oaiCacheOptions   `json:"prompt_cache_options,omitempty"`
	Functions            json.RawMessage    `json:"functions,omitempty"`
	// Thinking is Anthropic's thinking object, which Anthropic's
	// OpenAI-compatible endpoint accepts in a chat body.
	Thinking     *antThinking    `json:"thinking,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
}

type oaiStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaiCacheOptions struct {
	Mode string `json:"mode,omitempty"`
	TTL  string `json:"ttl,omitempty"`
}

type oaiResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema,omitempty"`
}

type oaiMessage struct {
	Role       string        `json:"role"`
	Content    oaiContent    `json:"content"`
	ToolCalls  []oaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	// Refusal is an assistant turn's refusal text, replayed in history.
	Refusal string `json:"refusal,omitempty"`
}

// oaiContent is a message's content: a string, an array of parts, or null.
// It marshals a lone plain text part back to a string, the form every
// OpenAI-compatible server accepts.
type oaiContent []oaiPart

type oaiPart struct {
	Type       string         `json:"type"`
	Text       string         `json:"text,omitempty"`
	Refusal    string         `json:"refusal,omitempty"`
	ImageURL   *oaiImageURL   `json:"image_url,omitempty"`
	Breakpoint *oaiBreakpoint `json:"prompt_cache_breakpoint,omitempty"`
}

type oaiImageURL struct {
	URL string `json:"url"`
}

type oaiBreakpoint struct {
	TTL string `json:"ttl,omitempty"`
}

func (c *oaiContent) UnmarshalJSON(b []byte) error {
	return unmarshalTextOrList(b, (*[]oaiPart)(c), func(s string) oaiPart { return oaiPart{Type: "text", Text: s} },
		"content must be a string, an array of parts or null")
}

func (c oaiContent) MarshalJSON() ([]byte, error) {
	switch {
	case len(c) == 0:
		return []byte("null"), nil
	case len(c) == 1 && c[0].Type == "text" && c[0].Breakpoint == nil:
		return marshal(c[0].Text)
	}
	return marshal([]oaiPart(c))
}

type oaiTool struct {
	Type     string      `json:"type"`
	Function oaiFunction `json:"function"`
}

type oaiFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type oaiToolCall struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Function oaiFunctionCall `json:"function"`
}

type oaiFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// oaiCompletion is a non-stream chat.completion as written for a client.
type oaiCompletion struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []oaiChoice `json:"choices"`
	Usage   *oaiUsage   `json:"usage,omitempty"`
}

// oaiAnswer is a non-stream chat.completion as an upstream sends it. Its
// usage is left raw for meter's reader.
type oaiAnswer struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []oaiChoice     `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
}

type oaiChoice struct {
	Index    int              `json:"index"`
	Message  oaiReplyMessage  `json:"message"`
	Logprobs *json.RawMessage `json:"logprobs"`
	// FinishReason is stop, length, tool_calls, content_filter or function_call.
	FinishReason string `json:"finish_reason"`
	// StopReason is vLLM's extension: the stop string that ended the turn
	// (a JSON string), a token id, or null. Read only.
	StopReason json.RawMessage `json:"stop_reason,omitempty"`
}

type oaiReplyMessage struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	Refusal   *string       `json:"refusal"`
	ToolCalls []oaiToolCall `json:"tool_calls,omitempty"`
}

// oaiUsage is usage as written for an OpenAI client.
type oaiUsage struct {
	PromptTokens        uint64            `json:"prompt_tokens"`
	CompletionTokens    uint64            `json:"completion_tokens"`
	TotalTokens         uint64            `json:"total_tokens"`
	PromptTokensDetails *oaiPromptDetails `json:"prompt_tokens_details,omitempty"`
}

type oaiPromptDetails struct {
	CachedTokens uint64 `json:"cached_tokens"`
}

// openAIUsage renders usage for an OpenAI client. Only the cached split
// survives; cache writes and reasoning are collapsed (usage_details). The
// total is meter's, input plus output without wrapping.
func openAIUsage(u meter.Usage) *oaiUsage {
	return &oaiUsage{
		PromptTokens:        u.InputTokens,
		CompletionTokens:    u.OutputTokens,
		TotalTokens:         u.TotalTokens,
		PromptTokensDetails: &oaiPromptDetails{CachedTokens: u.CachedInputTokens},
	}
}

// oaiError is the OpenAI error envelope.
type oaiError struct {
	Error oaiErrorBody `json:"error"`
}

type oaiErrorBody struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// unmarshalTextOrList decodes content that both dialects allow as a plain
// string or as a list: null empties dst, a string becomes one text element,
// a list decodes as is.
func unmarshalTextOrList[T any](b []byte, dst *[]T, text func(string) T, wrong string) error {
	switch b = bytes.TrimSpace(b); {
	case len(b) == 0 || string(b) == "null":
		*dst = nil
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*dst = []T{text(s)}
		return nil
	case b[0] == '[':
		return json.Unmarshal(b, dst)
	}
	return errors.New(wrong)
}
