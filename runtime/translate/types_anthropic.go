package translate

import (
	"encoding/json"

	"github.com/pistra/pistra/runtime/meter"
)

// The Anthropic Messages shapes, reduced to the fields the translators read
// or write.

type antRequest struct {
	Model         string           `json:"model"`
	MaxTokens     int64            `json:"max_tokens"`
	System        antContent       `json:"system,omitempty"`
	Messages      []antMessage     `json:"messages"`
	Tools         []antTool        `json:"tools,omitempty"`
	ToolChoice    *antToolChoice   `json:"tool_choice,omitempty"`
	StopSequences []string         `json:"stop_sequences,omitempty"`
	Temperature   *float64         `json:"temperature,omitempty"`
	TopP          *float64         `json:"top_p,omitempty"`
	Metadata      *antMetadata     `json:"metadata,omitempty"`
	Stream        bool             `json:"stream,omitempty"`
	Thinking      *antThinking     `json:"thinking,omitempty"`
	OutputConfig  *antOutputConfig `json:"output_config,omitempty"`
	CacheControl  *antCacheControl `json:"cache_control,omitempty"`
}

type antMessage struct {
	Role    string     `json:"role"`
	Content antContent `json:"content"`
}

// antContent is message, system or tool_result content: a string or an
// array of blocks. A string decodes to one text block; it always marshals
// as an array.
type antContent []antBlock

func (c *antContent) UnmarshalJSON(b []byte) error {
	return unmarshalTextOrList(b, (*[]antBlock)(c), func(s string) antBlock { return antBlock{Type: "text", Text: s} },
		"content must be a string or an array of blocks")
}

// antBlock is the union of the content blocks the translators handle.
type antBlock struct {
	Type         string           `json:"type"`
	Text         string           `json:"text,omitempty"`
	Source       *antSource       `json:"source,omitempty"`
	ID           string           `json:"id,omitempty"`
	Name         string           `json:"name,omitempty"`
	Input        json.RawMessage  `json:"input,omitempty"`
	ToolUseID    string           `json:"tool_use_id,omitempty"`
	Content      antContent       `json:"content,omitempty"`
	CacheControl *antCacheControl `json:"cache_control,omitempty"`
	// Thinking is a pointer because a thinking block whose text was
	// omitted still carries "thinking":"".
	Thinking  *string `json:"thinking,omitempty"`
	Signature string  `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"` // redacted_thinking
}

type antSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type antCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type antTool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type antToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

type antMetadata struct {
	UserID string `json:"user_id,omitempty"`
}

type antThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
	Display      string `json:"display,omitempty"`
}

type antOutputConfig struct {
	Effort string           `json:"effort,omitempty"`
	Format *antOutputFormat `json:"format,omitempty"`
}

type antOutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// antResponse is a non-stream message as an upstream sends it.
type antResponse struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Model      string     `json:"model"`
	Content    []antBlock `json:"content"`
	StopReason string     `json:"stop_reason"`
	// Usage is left raw for meter's reader.
	Usage json.RawMessage `json:"usage"`
}

// antClientResponse is a non-stream message as written for a client, with
// the usage its upstream could report: antClientUsage, or antFullUsage from
// a Responses upstream.
type antClientResponse[U antClientUsage | antFullUsage] struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Model        string     `json:"model"`
	Content      []antBlock `json:"content"`
	StopReason   string     `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        U          `json:"usage"`
}

// antClientUsage is usage as written for an Anthropic client.
type antClientUsage struct {
	InputTokens              uint64 `json:"input_tokens"`
	CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     uint64 `json:"cache_read_input_tokens"`
	OutputTokens             uint64 `json:"output_tokens"`
}

// anthropicUsage renders usage for an Anthropic client: input_tokens excludes
// the cached reads. Cache writes stay inside input_tokens and reasoning is not
// split out (usage_details).
func anthropicUsage(u meter.Usage) antClientUsage {
	return antClientUsage{
		InputTokens:          u.InputTokens - min(u.CachedInputTokens, u.InputTokens),
		CacheReadInputTokens: u.CachedInputTokens,
		OutputTokens:         u.OutputTokens,
	}
}

// antError is the Anthropic error envelope.
type antError struct {
	Type  string       `json:"type"`
	Error antErrorBody `json:"error"`
}

type antErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
