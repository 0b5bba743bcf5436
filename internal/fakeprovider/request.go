package fakeprovider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// wireRequest holds the request fields the fake reads, for every route of
// both dialects; each route looks only at its own. Everything else in a body
// is ignored.
type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	// System is Anthropic's system prompt: a string or text blocks.
	System json.RawMessage `json:"system"`
	// Instructions and Input are the Responses API's; embeddings use Input too.
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	// Prompt is the legacy completions prompt.
	Prompt json.RawMessage `json:"prompt"`

	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	N             *int           `json:"n"`

	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	MaxOutputTokens     *int `json:"max_output_tokens"`

	Stop          json.RawMessage `json:"stop"`
	StopSequences []string        `json:"stop_sequences"`

	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`

	ReasoningEffort string         `json:"reasoning_effort"`
	Reasoning       *reasoning     `json:"reasoning"`
	Thinking        *thinkingParam `json:"thinking"`

	// Sampling knobs matter only because Anthropic's 2026-10-21 version
	// rejects them.
	Temperature json.RawMessage `json:"temperature"`
	TopP        json.RawMessage `json:"top_p"`
	TopK        json.RawMessage `json:"top_k"`

	EncodingFormat string `json:"encoding_format"`
	Dimensions     int    `json:"dimensions"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type reasoning struct {
	Effort string `json:"effort"`
}

type thinkingParam struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// present reports whether an optional raw field was sent with a value.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// conversation is what the fake reads from a prompt: how much text it holds
// (prompt tokens derive from it) and the user's last words (the reply echoes them).
type conversation struct {
	textBytes int
	lastUser  string
}

func (c *conversation) add(text string) { c.textBytes += len(text) }

// messagesConversation reads a system prompt and a message list (Chat
// Completions and Anthropic Messages).
func (r *wireRequest) messagesConversation() (conversation, error) {
	var c conversation
	if present(r.System) {
		sys, err := contentText(r.System)
		if err != nil {
			return c, fmt.Errorf("system: %w", err)
		}
		c.add(sys)
	}
	for i, m := range r.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			return c, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		c.add(text)
		if m.Role == "user" {
			c.lastUser = text
		}
	}
	c.textBytes += len(r.Tools)
	return c, nil
}

// responsesConversation reads instructions and input (Responses API).
func (r *wireRequest) responsesConversation() (conversation, error) {
	c := conversation{textBytes: len(r.Instructions) + len(r.Tools)}
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		c.add(s)
		c.lastUser = s
		return c, nil
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(r.Input, &items); err != nil {
		return c, errors.New("input must be a string or an array of input items")
	}
	for i, item := range items {
		raw := item.Content
		if !present(raw) {
			raw = item.Output
		}
		text, err := contentText(raw)
		if err != nil {
			return c, fmt.Errorf("input[%d]: %w", i, err)
		}
		c.add(text)
		if item.Role == "user" {
			c.lastUser = text
		}
	}
	return c, nil
}

// contentText joins the text of a content value: a string, or an array of
// parts or blocks whose text sits in "text" or, for Anthropic tool results,
// in a nested "content".
func contentText(raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		text := p.Text
		if text == "" && present(p.Content) {
			nested, err := contentText(p.Content)
			if err != nil {
				return "", err
			}
			text = nested
		}
		if text == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(text)
	}
	return sb.String(), nil
}

// stops returns OpenAI's stop (a string or an array of strings).
func (r *wireRequest) stops() ([]string, error) {
	if !present(r.Stop) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(r.Stop, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(r.Stop, &many); err != nil {
		return nil, errors.New("stop must be a string or an array of strings")
	}
	return many, nil
}

// choiceCount returns n, which must lie in 1..128.
func (r *wireRequest) choiceCount() (int, error) {
	if r.N == nil {
		return 1, nil
	}
	if *r.N < 1 || *r.N > 128 {
		return 0, fmt.Errorf("%d is not a valid n: it must be between 1 and 128", *r.N)
	}
	return *r.N, nil
}

// firstSet returns the first non-nil limit, or -1 for none.
func firstSet(limits ...*int) int {
	for _, l := range limits {
		if l != nil {
			return *l
		}
	}
	return -1
}
