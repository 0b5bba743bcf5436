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

	// Store and Include are the Responses API's: whether it keeps the
	// response (default true), and extra output such as
	// reasoning.encrypted_content.
	Store   *bool    `json:"store"`
	Include []string `json:"include"`

	ReasoningEffort string         `json:"reasoning_effort"`
	Reasoning       *reasoning     `json:"reasoning"`
	Thinking        *thinkingParam `json:"thinking"`

	// Sampling knobs matter only because Anthropic's 2026-10-21 version
	// rejects them.
	Temperature json.RawMessage `json:"temperature"`
	TopP        json.RawMessage `json:"top_p"`
	TopK        json.RawMessage `json:"top_k"`

	// Answer formats: Chat's response_format, the Responses API's
	// text.format, Anthropic's output_config.format.
	ResponseFormat json.RawMessage `json:"response_format"`
	Text           *formatHolder   `json:"text"`
	OutputConfig   *formatHolder   `json:"output_config"`

	EncodingFormat string `json:"encoding_format"`
	Dimensions     int    `json:"dimensions"`
}

type formatHolder struct {
	Format json.RawMessage `json:"format"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type streamOptions struct {
	// IncludeUsage is nil when absent: Responses refuses the member even
	// false, so its presence matters.
	IncludeUsage *bool `json:"include_usage"`
}

// includeUsage reports whether stream_options.include_usage is true.
func (o *streamOptions) includeUsage() bool {
	return o != nil && o.IncludeUsage != nil && *o.IncludeUsage
}

type reasoning struct {
	Effort string `json:"effort"`
	// Summary asks for a summary of the reasoning (auto, concise, detailed).
	Summary string `json:"summary"`
}

type thinkingParam struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
	// Display "omitted" leaves the thinking's text out of the answer.
	Display string `json:"display"`
}

// present reports whether an optional raw field was sent with a value.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// conversation is what the fake reads from a prompt: how much text it holds
// (prompt tokens derive from it), the user's last words (the reply echoes
// them), whether it ends with a tool result and whether it says "json".
type conversation struct {
	textBytes int
	lastUser  string
	// afterToolResult: the last message is a tool result, which the model
	// answers in text unless tool_choice forces another call.
	afterToolResult bool
	mentionsJSON    bool
	// audioBytes is the size of the base64 audio in input_audio parts.
	audioBytes int
}

func (c *conversation) add(text string) {
	c.textBytes += len(text)
	c.mentionsJSON = c.mentionsJSON || containsJSONWord(text)
}

// said records a message of the user's; tool results are not their words,
// so a message of only tool results leaves the last words as they were.
func (c *conversation) said(role, own string) {
	if role == "user" && own != "" {
		c.lastUser = own
	}
}

// messagesConversation reads a system prompt and a message list (Chat
// Completions and Anthropic Messages). Chat sends tool results as role
// "tool" (once "function") messages, Anthropic as tool_result blocks.
func (r *wireRequest) messagesConversation() (conversation, error) {
	var c conversation
	if present(r.System) {
		sys, err := contentText(r.System)
		if err != nil {
			return c, fmt.Errorf("system: %w", err)
		}
		c.add(sys.text)
	}
	for i, m := range r.Messages {
		ct, err := contentText(m.Content)
		if err != nil {
			return c, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		c.add(ct.text)
		c.said(m.Role, ct.own)
		c.audioBytes += ct.audioBytes
		c.afterToolResult = m.Role == "tool" || m.Role == "function" || ct.toolResult
	}
	c.textBytes += len(r.Tools)
	return c, nil
}

// responsesConversation reads instructions and input (Responses API).
func (r *wireRequest) responsesConversation() (conversation, error) {
	var c conversation
	c.add(r.Instructions)
	c.textBytes += len(r.Tools)
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		c.add(s)
		c.lastUser = s
		return c, nil
	}
	var items []struct {
		Type    string          `json:"type"`
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
		ct, err := contentText(raw)
		if err != nil {
			return c, fmt.Errorf("input[%d]: %w", i, err)
		}
		c.add(ct.text)
		c.said(item.Role, ct.own)
		c.afterToolResult = item.Type == "function_call_output" || item.Type == "custom_tool_call_output"
	}
	return c, nil
}

// content is the text of a content value: all of it, which prompt tokens
// count, and the author's own words, without Anthropic tool results.
type content struct {
	text, own  string
	toolResult bool
	audioBytes int
}

// contentText reads a content value: a string, or an array of parts or
// blocks whose text sits in "text" or, for Anthropic tool results, in a
// nested "content".
func contentText(raw json.RawMessage) (content, error) {
	if !present(raw) {
		return content{}, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return content{text: s, own: s}, err
	}
	var parts []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
		// InputAudio is Chat's audio part.
		InputAudio struct {
			Data string `json:"data"`
		} `json:"input_audio"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return content{}, errors.New("must be a string or an array of content parts")
	}
	var c content
	var all, own strings.Builder
	for _, p := range parts {
		text := p.Text
		if text == "" && present(p.Content) {
			nested, err := contentText(p.Content)
			if err != nil {
				return content{}, err
			}
			text = nested.text
		}
		appendWords(&all, text)
		if p.Type == "input_audio" {
			c.audioBytes += len(p.InputAudio.Data)
		}
		if p.Type == "tool_result" {
			c.toolResult = true
		} else {
			appendWords(&own, text)
		}
	}
	c.text, c.own = all.String(), own.String()
	return c, nil
}

// appendWords adds text to sb, a space apart from what is there.
func appendWords(sb *strings.Builder, text string) {
	if text == "" {
		return
	}
	if sb.Len() > 0 {
		sb.WriteByte(' ')
	}
	sb.WriteString(text)
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
