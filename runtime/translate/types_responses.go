package translate

import (
	"encoding/json"
)

// The OpenAI Responses shapes, reduced to the fields the two Responses
// pairs read or write: decoded from a Responses client's request, and
// encoded for a Responses upstream.

type respRequest struct {
	Model              string          `json:"model"`
	Instructions       string          `json:"instructions,omitempty"`
	Input              respInput       `json:"input"`
	Tools              []respTool      `json:"tools,omitempty"`
	ToolChoice         json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens    *int64          `json:"max_output_tokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"top_p,omitempty"`
	Reasoning          *respReasoning  `json:"reasoning,omitempty"`
	Text               *respText       `json:"text,omitempty"`
	Store              *bool           `json:"store,omitempty"`
	Include            []string        `json:"include,omitempty"`
	Stream             bool            `json:"stream,omitempty"`
	User               string          `json:"user,omitempty"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Conversation       json.RawMessage `json:"conversation,omitempty"`

	// Read from a client only.
	SafetyIdentifier     string           `json:"safety_identifier,omitempty"`
	PromptCacheKey       string           `json:"prompt_cache_key,omitempty"`
	PromptCacheRetention string           `json:"prompt_cache_retention,omitempty"`
	PromptCacheOptions   *oaiCacheOptions `json:"prompt_cache_options,omitempty"`
}

// respInput is a string (one user message) or a list of items.
type respInput []respItem

func (in *respInput) UnmarshalJSON(b []byte) error {
	return unmarshalTextOrList(b, (*[]respItem)(in), func(s string) respItem {
		return respItem{Type: "message", Role: "user", Content: respContent{{Type: "input_text", Text: s}}}
	}, "input must be a string or an array of items")
}

// respItem is the union of the input and output items the pairs handle.
type respItem struct {
	Type    string      `json:"type,omitempty"`
	ID      string      `json:"id,omitempty"`
	Role    string      `json:"role,omitempty"`
	Status  string      `json:"status,omitempty"`
	Content respContent `json:"content,omitempty"`
	// function_call, custom_tool_call and their outputs.
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Input     string          `json:"input,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	// reasoning; a pointer, as a reasoning item's summary is sent even
	// when empty
	Summary          *[]respPart `json:"summary,omitempty"`
	EncryptedContent string      `json:"encrypted_content,omitempty"`
}

// respContent is a message's content: a string or a list of parts. It
// always marshals as a list.
type respContent []respPart

func (c *respContent) UnmarshalJSON(b []byte) error {
	return unmarshalTextOrList(b, (*[]respPart)(c), func(s string) respPart { return respPart{Type: "input_text", Text: s} },
		"content must be a string or an array of parts")
}

type respPart struct {
	Type        string          `json:"type"`
	Text        string          `json:"text,omitempty"`
	Refusal     string          `json:"refusal,omitempty"`
	ImageURL    string          `json:"image_url,omitempty"`
	FileID      string          `json:"file_id,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Breakpoint  *oaiBreakpoint  `json:"prompt_cache_breakpoint,omitempty"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	Format      json.RawMessage `json:"format,omitempty"` // a custom tool's grammar
}

type respReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type respText struct {
	Format *respFormat `json:"format,omitempty"`
}

type respFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// respResponse is a Response object, as a client is sent it and as an
// upstream sends it.
type respResponse struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Error             *respError      `json:"error"`
	IncompleteDetails *respIncomplete `json:"incomplete_details"`
	Model             string          `json:"model"`
	Output            []respItem      `json:"output"`
	Usage             json.RawMessage `json:"usage"`
}

type respIncomplete struct {
	Reason string `json:"reason"`
}

type respError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// respUsage is usage as a Responses client reads it: integer fields, the
// cache and reasoning splits inside the totals.
type respUsage struct {
	InputTokens         uint64            `json:"input_tokens"`
	InputTokensDetails  respInputDetails  `json:"input_tokens_details"`
	OutputTokens        uint64            `json:"output_tokens"`
	OutputTokensDetails respOutputDetails `json:"output_tokens_details"`
	TotalTokens         uint64            `json:"total_tokens"`
}

type respInputDetails struct {
	CachedTokens     uint64 `json:"cached_tokens"`
	CacheWriteTokens uint64 `json:"cache_write_tokens"`
}

type respOutputDetails struct {
	ReasoningTokens uint64 `json:"reasoning_tokens"`
}
