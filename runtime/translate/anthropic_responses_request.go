package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// AnthropicToResponsesRequest converts a Messages request body into a
// Responses request body for an OpenAI upstream that serves the model only
// on /v1/responses, appended to dst, and reports whether the client asked
// to stream.
//
// Carried: system text as instructions, turns as items (user tool_result
// blocks as function_call_output items ahead of the rest of the turn,
// assistant text as output messages, tool_use blocks as function_call
// items), text and image blocks, thinking blocks this gateway minted (as the
// reasoning items packed in their signatures), tools with an explicit
// strict (Responses turns strict on when it is left out) and tool_choice,
// disable_parallel_tool_use as parallel_tool_calls, max_tokens as
// max_output_tokens, temperature and top_p, metadata.user_id as user,
// thinking and output_config.effort as reasoning with a summary asked for,
// output_config.format as a strict text.format, and stream. The upstream
// stores nothing (store: false), and a reasoning request asks for
// reasoning.encrypted_content, which is what the next turn replays.
//
// Cache breakpoints: a block's cache_control is its part's
// prompt_cache_breakpoint (a marked system goes in a leading system
// message, which can carry them); a top-level or tool cache_control has no
// place on Responses and is removed (prompt_caching is declared lost).
//
// Dropped: cache_control ttls, stop_sequences, top_k,
// service_tier, context_management, tool_result is_error, and thinking
// blocks minted elsewhere (a real Anthropic signature means nothing to
// OpenAI). Refused: document and search_result blocks, file image sources
// and server tools.
func AnthropicToResponsesRequest(dst, body []byte, o Options) (out []byte, stream bool, err error) {
	var in antRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, fmt.Errorf("anthropic request: %w", err)
	}
	no := false
	req := respRequest{Model: o.model(in.Model), Stream: in.Stream, Temperature: in.Temperature, TopP: in.TopP, Store: &no}
	if in.MaxTokens > 0 {
		n := max(in.MaxTokens, minOutputTokens)
		req.MaxOutputTokens = &n
	}
	if req.Input, err = antMessagesToItems(in.Messages); err != nil {
		return nil, in.Stream, err
	}
	if req.Instructions, req.Input, err = withSystem(in.System, req.Input); err != nil {
		return nil, in.Stream, err
	}
	if req.Tools, err = antToolsToResponses(in.Tools); err != nil {
		return nil, in.Stream, err
	}
	if req.ToolChoice, req.ParallelToolCalls, err = antToolChoiceToResponses(in.ToolChoice, len(in.Tools) > 0); err != nil {
		return nil, in.Stream, err
	}
	if in.Metadata != nil {
		req.User = in.Metadata.UserID
	}
	if effort := thinkingToEffort(in.Thinking, in.OutputConfig); effort != "" {
		req.Reasoning = &respReasoning{Effort: effort, Summary: "auto"}
		req.Include = []string{"reasoning.encrypted_content"}
	}
	if in.OutputConfig != nil && in.OutputConfig.Format != nil {
		yes := true
		req.Text = &respText{Format: &respFormat{Type: "json_schema", Name: "structured_output", Schema: in.OutputConfig.Format.Schema, Strict: &yes}}
	}
	out, err = appendJSON(dst, req)
	if err != nil {
		return nil, in.Stream, fmt.Errorf("responses request: %w", err)
	}
	return out, in.Stream, nil
}

// minOutputTokens is the smallest max_output_tokens Responses takes.
const minOutputTokens = 16

// withSystem carries the system blocks, which must be text: as
// instructions, or, when a block marks a cache breakpoint, as a leading
// system message whose parts keep the breakpoints.
func withSystem(system antContent, items []respItem) (string, []respItem, error) {
	texts := make([]string, 0, len(system))
	marked := false
	for i, b := range system {
		if b.Type != "text" {
			return "", nil, fmt.Errorf("anthropic request: system[%d]: %q blocks are not translated", i, b.Type)
		}
		texts, marked = append(texts, b.Text), marked || b.CacheControl != nil
	}
	if !marked {
		return strings.Join(texts, "\n\n"), items, nil
	}
	parts, err := blocksToInputParts(system)
	if err != nil {
		return "", nil, fmt.Errorf("anthropic request: system: %w", err)
	}
	return "", append([]respItem{{Type: "message", Role: "system", Content: parts}}, items...), nil
}

func antMessagesToItems(msgs []antMessage) ([]respItem, error) {
	out := make([]respItem, 0, len(msgs))
	for i := range msgs {
		var err error
		switch m := &msgs[i]; m.Role {
		case "user":
			out, err = appendUserItems(out, m.Content)
		case "assistant":
			out, err = appendAssistantItems(out, m.Content)
		default:
			err = fmt.Errorf("role %q is not translated", m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("anthropic request: messages[%d]: %w", i, err)
		}
	}
	return out, nil
}

// appendUserItems appends a user turn: a function_call_output per
// tool_result, then a message of the rest.
func appendUserItems(out []respItem, blocks antContent) ([]respItem, error) {
	var rest antContent
	for i := range blocks {
		b := &blocks[i]
		if b.Type != "tool_result" {
			rest = append(rest, *b)
			continue
		}
		parts, err := blocksToInputParts(b.Content)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		if n := len(parts); n > 0 && b.CacheControl != nil {
			parts[n-1].Breakpoint = &oaiBreakpoint{}
		}
		output, _ := marshal(toolOutput(parts)) // strings only: cannot fail
		out = append(out, respItem{Type: "function_call_output", CallID: b.ToolUseID, Output: output})
	}
	parts, err := blocksToInputParts(rest)
	if err != nil || len(parts) == 0 {
		return out, err
	}
	return append(out, respItem{Type: "message", Role: "user", Content: parts}), nil
}

// toolOutput is a function_call_output's output: a string when the result
// is plain text, the parts otherwise.
func toolOutput(parts respContent) any {
	var text strings.Builder
	for _, p := range parts {
		if p.Type != "input_text" || p.Breakpoint != nil {
			return parts
		}
		text.WriteString(p.Text)
	}
	return text.String()
}

// appendAssistantItems appends an assistant turn in its order: thinking
// as reasoning items, runs of text as output messages, tool_use blocks as
// function calls.
func appendAssistantItems(out []respItem, blocks antContent) ([]respItem, error) {
	var text respContent
	flush := func() {
		if len(text) > 0 {
			out = append(out, respItem{Type: "message", Role: "assistant", Status: "completed", Content: text})
			text = nil
		}
	}
	for i := range blocks {
		switch b := &blocks[i]; b.Type {
		case "text":
			if b.Text != "" {
				text = append(text, respPart{Type: "output_text", Text: b.Text, Annotations: json.RawMessage(`[]`), Breakpoint: breakpoint(b)})
			}
		case "tool_use":
			flush()
			args, err := inputToArguments(b.Input)
			if err != nil {
				return nil, fmt.Errorf("content[%d] (%s): %w", i, b.ID, err)
			}
			out = append(out, respItem{Type: "function_call", CallID: b.ID, Name: b.Name, Arguments: args})
		case "thinking", "redacted_thinking":
			flush()
			if r, ok := unpackReasoning(b.Signature); ok {
				out = append(out, respItem{Type: "reasoning", ID: r.ID, Summary: thinkingSummary(b), EncryptedContent: r.EncryptedContent})
			}
		default:
			return nil, fmt.Errorf("content[%d]: %q blocks are not translated", i, b.Type)
		}
	}
	flush()
	return out, nil
}

// thinkingSummary is a thinking block's text as a reasoning summary.
func thinkingSummary(b *antBlock) *[]respPart {
	summary := []respPart{}
	if b.Thinking != nil && *b.Thinking != "" {
		summary = append(summary, respPart{Type: "summary_text", Text: *b.Thinking})
	}
	return &summary
}

// blocksToInputParts converts text and image blocks into Responses input
// parts, a block's cache_control as its part's breakpoint.
func blocksToInputParts(blocks antContent) (respContent, error) {
	out := make(respContent, 0, len(blocks))
	for i := range blocks {
		parts, err := antBlocksToParts(blocks[i : i+1])
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		for _, p := range parts {
			part := respPart{Type: "input_text", Text: p.Text, Breakpoint: breakpoint(&blocks[i])}
			if p.ImageURL != nil {
				part = respPart{Type: "input_image", ImageURL: p.ImageURL.URL, Breakpoint: part.Breakpoint}
			}
			out = append(out, part)
		}
	}
	return out, nil
}

// breakpoint is the Responses cache breakpoint for a block's
// cache_control, nil when it has none. Anthropic's ttls (5m, 1h) have no
// Responses twin and are left to the upstream's default.
func breakpoint(b *antBlock) *oaiBreakpoint {
	if b.CacheControl == nil {
		return nil
	}
	return &oaiBreakpoint{}
}
