package translate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// OpenAIToAnthropicRequest converts a Chat Completions request body into a
// Messages request body for an Anthropic upstream, appended to dst (so the
// caller can hand in a pooled buffer), and reports whether the client asked
// to stream.
//
// Carried: system and developer messages (hoisted, in order, into the
// top-level system, as Anthropic has no mid-conversation system turn), turns
// (consecutive same-role turns merged, tool messages as user tool_result
// blocks), text and image parts, tools (strict kept, a strict schema
// lowered to what Anthropic's strict mode takes) and tool_choice,
// parallel_tool_calls, tool call ids, stop, temperature (capped at
// Anthropic's maximum of 1) and top_p, max tokens, user or safety_identifier
// as metadata.user_id, reasoning_effort as adaptive thinking with an effort
// (or the thinking object Anthropic's compatible endpoint takes, as it is),
// response_format as output_config.format (its schema lowered), prompt cache breakpoints and
// retention as cache_control, and stream.
//
// Dropped: input_audio parts and n (the declared losses), and frequency and
// presence penalties, seed, logit_bias, logprobs, top_logprobs, metadata,
// modalities, audio, prediction, service_tier, store, verbosity,
// web_search_options, stream_options, messages[].name, image detail.
// Refused: file parts, custom tools, allowed_tools choices and the deprecated
// functions API, which have no faithful counterpart.
func OpenAIToAnthropicRequest(dst, body []byte, o Options) (out []byte, stream bool, err error) {
	var in oaiRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, fmt.Errorf("openai request: %w", err)
	}
	if len(in.Functions) > 0 || len(in.FunctionCall) > 0 {
		return nil, in.Stream, errors.New("openai request: the deprecated functions API is not translated; use tools")
	}
	req := antRequest{Model: o.model(in.Model), Stream: in.Stream}
	if req.MaxTokens, err = maxTokens(&in, o); err != nil {
		return nil, in.Stream, err
	}
	ttl := cacheTTL(&in)
	if req.System, req.Messages, err = oaiMessagesToAnthropic(in.Messages, ttl); err != nil {
		return nil, in.Stream, err
	}
	if req.Tools, err = oaiToolsToAnthropic(in.Tools); err != nil {
		return nil, in.Stream, err
	}
	if req.ToolChoice, err = oaiToolChoiceToAnthropic(in.ToolChoice, in.ParallelToolCalls, len(in.Tools) > 0); err != nil {
		return nil, in.Stream, err
	}
	if req.StopSequences, err = parseStop(in.Stop); err != nil {
		return nil, in.Stream, err
	}
	// anthropic-version 2026-10-21 and later refuse temperature and top_p,
	// even at their defaults, so they are dropped for those versions.
	if !o.dropsSampling() {
		req.Temperature, req.TopP = capTemperature(in.Temperature), in.TopP
	}
	if user := cmp.Or(in.User, in.SafetyIdentifier); user != "" {
		req.Metadata = &antMetadata{UserID: user}
	}
	if req.Thinking, req.OutputConfig, err = effortToThinking(in.ReasoningEffort); err != nil {
		return nil, in.Stream, err
	}
	if in.Thinking != nil {
		if in.ReasoningEffort != "" {
			return nil, in.Stream, errors.New("openai request: reasoning_effort and thinking both set; send one")
		}
		req.Thinking = in.Thinking // already Anthropic's shape
	}
	if thinks(req.Thinking) && forcesTool(req.ToolChoice) {
		// Anthropic answers 400 to thinking with a forced tool; dropping
		// either would serve less than the client asked for.
		return nil, in.Stream, errors.New("openai request: reasoning_effort cannot be combined with a tool_choice " +
			"that forces a tool call: with thinking on, an Anthropic upstream takes only auto or none")
	}
	if req.OutputConfig, err = withOutputFormat(req.OutputConfig, in.ResponseFormat); err != nil {
		return nil, in.Stream, err
	}
	if asksAutomaticCaching(&in) {
		req.CacheControl = &antCacheControl{Type: "ephemeral", TTL: ttl}
	}
	out, err = appendJSON(dst, req)
	if err != nil {
		return nil, in.Stream, fmt.Errorf("anthropic request: %w", err)
	}
	return out, in.Stream, nil
}

func thinks(t *antThinking) bool { return t != nil && t.Type != "disabled" }

func forcesTool(c *antToolChoice) bool { return c != nil && (c.Type == "any" || c.Type == "tool") }

func maxTokens(in *oaiRequest, o Options) (int64, error) {
	n := o.DefaultMaxTokens
	if in.MaxTokens != nil {
		n = *in.MaxTokens
	}
	if in.MaxCompletionTokens != nil {
		n = *in.MaxCompletionTokens
	}
	if n <= 0 {
		return 0, errors.New("openai request: no max_completion_tokens and no default max tokens for this model; Anthropic requires one")
	}
	return n, nil
}

// oaiMessagesToAnthropic splits system text from the turns and merges
// consecutive turns of one role, which Anthropic requires to alternate.
func oaiMessagesToAnthropic(msgs []oaiMessage, ttl string) (antContent, []antMessage, error) {
	var system antContent
	turns := make([]antMessage, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		var blocks []antBlock
		var err error
		role := "user"
		switch m.Role {
		case "system", "developer":
			if blocks, err = oaiPartsToBlocks(m.Content, ttl); err == nil && !allText(blocks) {
				err = errors.New("system content must be text")
			}
			system = append(system, blocks...)
			blocks = nil
		case "user":
			blocks, err = oaiPartsToBlocks(m.Content, ttl)
		case "assistant":
			role = "assistant"
			blocks, err = oaiAssistantToBlocks(m, ttl)
		case "tool":
			blocks, err = oaiToolResult(m, ttl)
		default:
			err = fmt.Errorf("role %q is not translated", m.Role)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("openai request: messages[%d]: %w", i, err)
		}
		turns = appendTurn(turns, role, blocks)
	}
	return system, turns, nil
}

// appendTurn adds blocks as a turn, merging into the previous turn when it
// has the same role. A turn left with no blocks is not sent.
func appendTurn(turns []antMessage, role string, blocks []antBlock) []antMessage {
	if len(blocks) == 0 {
		return turns
	}
	if n := len(turns); n > 0 && turns[n-1].Role == role {
		turns[n-1].Content = append(turns[n-1].Content, blocks...)
		return turns
	}
	return append(turns, antMessage{Role: role, Content: blocks})
}

func allText(blocks []antBlock) bool {
	for _, b := range blocks {
		if b.Type != "text" {
			return false
		}
	}
	return true
}

// oaiPartsToBlocks converts content parts. Empty text is skipped (Anthropic
// rejects empty text blocks) and audio is dropped (audio_input).
func oaiPartsToBlocks(parts oaiContent, ttl string) ([]antBlock, error) {
	blocks := make([]antBlock, 0, len(parts))
	for i := range parts {
		p := &parts[i]
		var b antBlock
		switch p.Type {
		case "text", "refusal":
			if b = (antBlock{Type: "text", Text: p.Text + p.Refusal}); b.Text == "" {
				continue
			}
		case "image_url":
			if p.ImageURL == nil {
				return nil, fmt.Errorf("content[%d]: image_url part without a url", i)
			}
			src, err := imageSource(p.ImageURL.URL)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", i, err)
			}
			b = antBlock{Type: "image", Source: src}
		case "input_audio":
			continue
		default:
			return nil, fmt.Errorf("content[%d]: %q parts are not translated", i, p.Type)
		}
		if p.Breakpoint != nil {
			b.CacheControl = &antCacheControl{Type: "ephemeral", TTL: cmp.Or(bpTTL(p.Breakpoint), ttl)}
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// imageSource turns an image URL into a source: a data URL becomes base64
// data, an http(s) URL stays a URL.
func imageSource(url string) (*antSource, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || media == "" {
			return nil, errors.New("image data URLs must be base64 with a media type")
		}
		return &antSource{Type: "base64", MediaType: media, Data: data}, nil
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		return &antSource{Type: "url", URL: url}, nil
	}
	return nil, errors.New("image URLs must be data: or http(s) URLs")
}

// oaiAssistantToBlocks converts an assistant turn: its text, then its tool
// calls as tool_use blocks with the arguments string parsed into an object.
func oaiAssistantToBlocks(m *oaiMessage, ttl string) ([]antBlock, error) {
	blocks, err := oaiPartsToBlocks(m.Content, ttl)
	if err != nil {
		return nil, err
	}
	if m.Refusal != "" {
		blocks = append(blocks, antBlock{Type: "text", Text: m.Refusal})
	}
	for i, c := range m.ToolCalls {
		if c.Type != "" && c.Type != "function" {
			return nil, fmt.Errorf("tool_calls[%d]: %q calls are not translated", i, c.Type)
		}
		input, err := argumentsToInput(c.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool_calls[%d] (%s): %w", i, c.ID, err)
		}
		blocks = append(blocks, antBlock{Type: "tool_use", ID: c.ID, Name: c.Function.Name, Input: input})
	}
	return blocks, nil
}

// argumentsToInput parses a tool call's arguments string into the object
// Anthropic's input carries. Empty arguments mean no arguments.
func argumentsToInput(args string) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace([]byte(args))
	if len(trimmed) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, errors.New("arguments are not a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// oaiToolResult turns a tool message into a user tool_result block.
func oaiToolResult(m *oaiMessage, ttl string) ([]antBlock, error) {
	if m.ToolCallID == "" {
		return nil, errors.New("tool message without tool_call_id")
	}
	content, err := oaiPartsToBlocks(m.Content, ttl)
	if err != nil {
		return nil, err
	}
	return []antBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: content}}, nil
}

func oaiToolsToAnthropic(tools []oaiTool) ([]antTool, error) {
	out := make([]antTool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("openai request: tools[%d]: %q tools are not translated", i, t.Type)
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			// Anthropic requires a schema; OpenAI's default is no parameters.
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if isTrue(t.Function.Strict) {
			// Anthropic's strict mode refuses keywords OpenAI's takes;
			// lowered, they advise the model (RequestLosses declares it).
			var err error
			if schema, _, err = LowerSchema(schema); err != nil {
				return nil, fmt.Errorf("openai request: tools[%d].function.parameters: %w", i, err)
			}
		}
		out = append(out, antTool{
			Name: t.Function.Name, Description: t.Function.Description,
			InputSchema: schema, Strict: t.Function.Strict,
		})
	}
	return out, nil
}

// oaiToolChoiceToAnthropic maps auto/none/required/named to
// auto/none/any/tool, and parallel_tool_calls:false to
// disable_parallel_tool_use, which only a choice can carry.
func oaiToolChoiceToAnthropic(raw json.RawMessage, parallel *bool, hasTools bool) (*antToolChoice, error) {
	var choice antToolChoice
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var mode string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		if parallel == nil || *parallel || !hasTools {
			return nil, nil
		}
		choice.Type = "auto"
	case json.Unmarshal(raw, &mode) == nil:
		switch mode {
		case "auto", "none":
			choice.Type = mode
		case "required":
			choice.Type = "any"
		default:
			return nil, fmt.Errorf("openai request: tool_choice %q is not translated", mode)
		}
	case json.Unmarshal(raw, &named) == nil && named.Type == "function" && named.Function.Name != "":
		choice = antToolChoice{Type: "tool", Name: named.Function.Name}
	default:
		return nil, fmt.Errorf("openai request: tool_choice %s is not translated", raw)
	}
	if parallel != nil && !*parallel && choice.Type != "none" {
		disable := true
		choice.DisableParallelToolUse = &disable
	}
	return &choice, nil
}
