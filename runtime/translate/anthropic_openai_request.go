package translate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// AnthropicToOpenAIRequest converts a Messages request body into a Chat
// Completions request body for an OpenAI upstream, appended to dst, and
// reports whether the client asked to stream. A streamed request always asks the upstream for
// usage (stream_options.include_usage), which the Anthropic client's
// message_delta needs.
//
// Carried: system (string or blocks) as a leading system message, turns
// (user tool_result blocks as tool messages ahead of the rest of the turn),
// text and image blocks, tools and tool_choice, disable_parallel_tool_use as
// parallel_tool_calls, tool_use ids and inputs, stop_sequences, temperature
// and top_p, max_tokens as max_completion_tokens, metadata.user_id as user,
// thinking or output_config.effort as reasoning_effort, and stream.
//
// Dropped: tools[].strict (strict_tools), every cache_control
// (prompt_caching), output_config.format (structured_output), and top_k,
// service_tier, container, inference_geo, speed, tool_result is_error, and
// thinking blocks in history, which Chat Completions cannot take back.
// Images inside a tool result ride in a user message right after the tool
// messages, since OpenAI tool messages carry text only.
// Refused: document and search_result blocks, file image sources, and server
// tools, which have no Chat Completions counterpart.
func AnthropicToOpenAIRequest(dst, body []byte, o Options) (out []byte, stream bool, err error) {
	var in antRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, fmt.Errorf("anthropic request: %w", err)
	}
	req := oaiRequest{Model: o.model(in.Model), Stream: in.Stream, Temperature: in.Temperature, TopP: in.TopP}
	if in.MaxTokens > 0 {
		req.MaxCompletionTokens = &in.MaxTokens
	}
	if in.Stream && !o.OmitStreamUsage {
		req.StreamOptions = &oaiStreamOptions{IncludeUsage: true}
	}
	if req.Messages, err = antMessagesToOpenAI(in.System, in.Messages); err != nil {
		return nil, in.Stream, err
	}
	if req.Tools, err = antToolsToOpenAI(in.Tools); err != nil {
		return nil, in.Stream, err
	}
	if req.ToolChoice, req.ParallelToolCalls, err = antToolChoiceToOpenAI(in.ToolChoice, len(in.Tools) > 0); err != nil {
		return nil, in.Stream, err
	}
	if len(in.StopSequences) > 0 {
		req.Stop, _ = marshal(in.StopSequences)
	}
	if in.Metadata != nil {
		req.User = in.Metadata.UserID
	}
	req.ReasoningEffort = thinkingToEffort(in.Thinking, in.OutputConfig)
	out, err = appendJSON(dst, req)
	if err != nil {
		return nil, in.Stream, fmt.Errorf("openai request: %w", err)
	}
	return out, in.Stream, nil
}

func antMessagesToOpenAI(system antContent, msgs []antMessage) ([]oaiMessage, error) {
	out := make([]oaiMessage, 0, len(msgs)+1)
	if len(system) > 0 {
		parts, err := antBlocksToParts(system)
		if err != nil {
			return nil, fmt.Errorf("anthropic request: system: %w", err)
		}
		out = append(out, oaiMessage{Role: "system", Content: parts})
	}
	for i := range msgs {
		var err error
		switch m := &msgs[i]; m.Role {
		case "user", "system":
			out, err = appendAntTurn(out, m.Role, m.Content)
		case "assistant":
			out, err = appendAntAssistant(out, m.Content)
		default:
			err = fmt.Errorf("role %q is not translated", m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("anthropic request: messages[%d]: %w", i, err)
		}
	}
	return out, nil
}

// appendAntTurn appends a user (or system) turn: one tool message per
// tool_result, then the remaining content and any tool-result images.
func appendAntTurn(out []oaiMessage, role string, blocks antContent) ([]oaiMessage, error) {
	var rest antContent
	var images oaiContent
	for i := range blocks {
		b := &blocks[i]
		if b.Type != "tool_result" {
			rest = append(rest, *b)
			continue
		}
		text, imgs, err := toolResultParts(b.Content)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		if len(text) == 0 {
			text = oaiContent{{Type: "text"}} // a tool message needs content, even empty
		}
		out = append(out, oaiMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
		images = append(images, imgs...)
	}
	parts, err := antBlocksToParts(rest)
	if err != nil {
		return nil, err
	}
	// Tool-result images lead: they belong to the results, which come first.
	if parts = append(images, parts...); len(parts) > 0 {
		out = append(out, oaiMessage{Role: role, Content: parts})
	}
	return out, nil
}

// appendAntAssistant appends an assistant turn: text as content, tool_use
// blocks as tool_calls. Thinking blocks are dropped.
func appendAntAssistant(out []oaiMessage, blocks antContent) ([]oaiMessage, error) {
	msg := oaiMessage{Role: "assistant"}
	for i := range blocks {
		switch b := &blocks[i]; b.Type {
		case "text":
			if b.Text != "" {
				msg.Content = append(msg.Content, oaiPart{Type: "text", Text: b.Text})
			}
		case "tool_use":
			args, err := inputToArguments(b.Input)
			if err != nil {
				return nil, fmt.Errorf("content[%d] (%s): %w", i, b.ID, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, oaiToolCall{
				ID: b.ID, Type: "function", Function: oaiFunctionCall{Name: b.Name, Arguments: args},
			})
		case "thinking", "redacted_thinking":
		default:
			return nil, fmt.Errorf("content[%d]: %q blocks are not translated", i, b.Type)
		}
	}
	if len(msg.Content) == 0 && len(msg.ToolCalls) == 0 {
		return out, nil
	}
	return append(out, msg), nil
}

// antBlocksToParts converts text and image blocks into parts, in order.
func antBlocksToParts(blocks antContent) (oaiContent, error) {
	parts := make(oaiContent, 0, len(blocks))
	for i := range blocks {
		switch b := &blocks[i]; b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, oaiPart{Type: "text", Text: b.Text})
			}
		case "image":
			url, err := imageURL(b.Source)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", i, err)
			}
			parts = append(parts, oaiPart{Type: "image_url", ImageURL: &oaiImageURL{URL: url}})
		default:
			return nil, fmt.Errorf("content[%d]: %q blocks are not translated", i, b.Type)
		}
	}
	return parts, nil
}

// toolResultParts splits a tool result's content into the text its tool
// message carries and the images that must travel in a user message.
func toolResultParts(blocks antContent) (text, images oaiContent, err error) {
	parts, err := antBlocksToParts(blocks)
	for _, p := range parts {
		if p.Type == "text" {
			text = append(text, p)
		} else {
			images = append(images, p)
		}
	}
	return text, images, err
}

// imageURL turns an image source into an OpenAI image URL: base64 data as a
// data URL, a URL as itself.
func imageURL(src *antSource) (string, error) {
	switch {
	case src == nil:
		return "", errors.New("image without a source")
	case src.Type == "base64" && src.MediaType != "":
		return "data:" + src.MediaType + ";base64," + src.Data, nil
	case src.Type == "url" && src.URL != "":
		return src.URL, nil
	}
	return "", fmt.Errorf("image source %q is not translated", src.Type)
}
