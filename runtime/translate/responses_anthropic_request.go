package translate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ResponsesToAnthropicRequest converts a Responses request body into a
// Messages request body for an Anthropic upstream, appended to dst, and
// reports whether the client asked to stream. custom receives the names of
// the client's custom (freeform) tools, which the answer must give back as
// custom_tool_call items.
//
// Carried: instructions and system/developer messages (hoisted, in order,
// into system), user and assistant messages with text and images,
// function_call and custom_tool_call items as tool_use blocks and their
// outputs as tool_result blocks (grouped into the alternating turns
// Anthropic requires, tool results first in their turn), reasoning items
// this gateway minted (their thinking blocks, unpacked from
// encrypted_content), function tools (strict only when explicitly true),
// custom tools as a tool taking one string, tool_choice and
// parallel_tool_calls, max_output_tokens, temperature and top_p, user or
// safety_identifier as metadata.user_id, reasoning as thinking, text.format
// as output_config.format, prompt cache breakpoints and keys as
// cache_control, and stream.
//
// Dropped: input_audio parts (audio_input), foreign reasoning items, store,
// include, text.verbosity, truncation, max_tool_calls, service_tier,
// metadata, top_logprobs. Refused: previous_response_id, conversation and
// item_reference (this gateway keeps no store of items to resolve them
// from), file parts, hosted tools, and json_object output.
func ResponsesToAnthropicRequest(dst, body []byte, o Options, custom *[]string) (out []byte, stream bool, err error) {
	var in respRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, fmt.Errorf("responses request: %w", err)
	}
	if err := refuseStateful(&in); err != nil {
		return nil, in.Stream, err
	}
	req := antRequest{Model: o.model(in.Model), Stream: in.Stream, MaxTokens: o.DefaultMaxTokens}
	if in.MaxOutputTokens != nil {
		req.MaxTokens = *in.MaxOutputTokens
	}
	if req.MaxTokens <= 0 {
		return nil, in.Stream, errors.New("responses request: no max_output_tokens and no default max tokens for this model; Anthropic requires one")
	}
	cache := oaiRequest{PromptCacheKey: in.PromptCacheKey, PromptCacheRetention: in.PromptCacheRetention, PromptCacheOptions: in.PromptCacheOptions}
	ttl := cacheTTL(&cache)
	if in.Instructions != "" {
		req.System = antContent{{Type: "text", Text: in.Instructions}}
	}
	if req.System, req.Messages, err = respItemsToAnthropic(req.System, in.Input, ttl); err != nil {
		return nil, in.Stream, err
	}
	if req.Tools, err = respToolsToAnthropic(in.Tools, custom); err != nil {
		return nil, in.Stream, err
	}
	if req.ToolChoice, err = respToolChoiceToAnthropic(in.ToolChoice, in.ParallelToolCalls, len(in.Tools) > 0); err != nil {
		return nil, in.Stream, err
	}
	if !o.dropsSampling() {
		req.Temperature, req.TopP = capTemperature(in.Temperature), in.TopP
	}
	if user := cmp.Or(in.User, in.SafetyIdentifier); user != "" {
		req.Metadata = &antMetadata{UserID: user}
	}
	if err := respReasoningToThinking(&req, in.Reasoning); err != nil {
		return nil, in.Stream, err
	}
	if req.OutputConfig, err = respFormatToAnthropic(req.OutputConfig, in.Text); err != nil {
		return nil, in.Stream, err
	}
	if asksAutomaticCaching(&cache) {
		req.CacheControl = &antCacheControl{Type: "ephemeral", TTL: ttl}
	}
	out, err = appendJSON(dst, req)
	if err != nil {
		return nil, in.Stream, fmt.Errorf("anthropic request: %w", err)
	}
	return out, in.Stream, nil
}

// refuseStateful refuses what only a store of earlier responses could
// resolve; dropping it would answer a different conversation.
func refuseStateful(in *respRequest) error {
	const why = "this gateway keeps no store of responses for an Anthropic upstream; send the whole conversation in input (store: false)"
	switch {
	case in.PreviousResponseID != "":
		return errors.New("responses request: previous_response_id is not supported: " + why)
	case len(in.Conversation) > 0 && string(in.Conversation) != "null":
		return errors.New("responses request: conversation is not supported: " + why)
	}
	for i := range in.Input {
		// An item_reference may leave out its type: then it is an id alone.
		if it := &in.Input[i]; it.Type == "item_reference" || (it.Type == "" && it.Role == "" && it.ID != "") {
			return fmt.Errorf("responses request: input[%d]: item_reference is not supported: %s", i, why)
		}
	}
	return nil
}

// respItemsToAnthropic appends system text to system and turns the items
// into alternating turns.
func respItemsToAnthropic(system antContent, items []respItem, ttl string) (antContent, []antMessage, error) {
	turns := make([]antMessage, 0, len(items))
	for i := range items {
		it := &items[i]
		role, blocks, err := respItemToBlocks(it, ttl)
		if err != nil {
			return nil, nil, fmt.Errorf("responses request: input[%d]: %w", i, err)
		}
		if role == "system" {
			system = append(system, blocks...)
			continue
		}
		turns = appendTurn(turns, role, blocks)
	}
	for i := range turns {
		if turns[i].Role == "user" {
			// Anthropic wants a turn's tool results before anything else in it.
			slices.SortStableFunc(turns[i].Content, func(a, b antBlock) int { return resultsFirst(a) - resultsFirst(b) })
		}
	}
	return system, turns, nil
}

func resultsFirst(b antBlock) int {
	if b.Type == "tool_result" {
		return 0
	}
	return 1
}

// respItemToBlocks converts one input item into the role of the turn it
// belongs to and its blocks.
func respItemToBlocks(it *respItem, ttl string) (string, []antBlock, error) {
	switch it.Type {
	case "", "message":
		return respMessageToBlocks(it, ttl)
	case "function_call":
		input, err := argumentsToInput(it.Arguments)
		if err != nil {
			return "", nil, fmt.Errorf("function_call %s: %w", it.CallID, err)
		}
		return "assistant", []antBlock{{Type: "tool_use", ID: it.CallID, Name: it.Name, Input: input}}, nil
	case "custom_tool_call":
		input, _ := marshal(customInput{Input: it.Input}) // a string: cannot fail
		return "assistant", []antBlock{{Type: "tool_use", ID: it.CallID, Name: it.Name, Input: input}}, nil
	case "function_call_output", "custom_tool_call_output":
		content, err := respOutputToBlocks(it.Output, ttl)
		if err != nil {
			return "", nil, fmt.Errorf("%s %s: %w", it.Type, it.CallID, err)
		}
		return "user", []antBlock{{Type: "tool_result", ToolUseID: it.CallID, Content: content}}, nil
	case "reasoning":
		if b, ok := unpackThinking(it.EncryptedContent); ok {
			return "assistant", []antBlock{b}, nil
		}
		return "assistant", nil, nil // another model's reasoning: Anthropic cannot read it
	}
	return "", nil, fmt.Errorf("%q items are not translated", it.Type)
}

// customInput is a custom tool's one string, as its tool_use input.
type customInput struct {
	Input string `json:"input"`
}

func respMessageToBlocks(it *respItem, ttl string) (string, []antBlock, error) {
	role := it.Role
	switch role {
	case "system", "developer":
		blocks, err := respPartsToBlocks(it.Content, ttl)
		if err == nil && !allText(blocks) {
			err = errors.New("system content must be text")
		}
		return "system", blocks, err
	case "user", "assistant":
		blocks, err := respPartsToBlocks(it.Content, ttl)
		return role, blocks, err
	}
	return "", nil, fmt.Errorf("role %q is not translated", role)
}

// respPartsToBlocks converts message parts. Empty text is skipped
// (Anthropic rejects empty text blocks) and audio is dropped (audio_input).
func respPartsToBlocks(parts respContent, ttl string) ([]antBlock, error) {
	blocks := make([]antBlock, 0, len(parts))
	for i := range parts {
		p := &parts[i]
		var b antBlock
		switch p.Type {
		case "input_text", "output_text", "text", "refusal":
			if b = (antBlock{Type: "text", Text: p.Text + p.Refusal}); b.Text == "" {
				continue
			}
		case "input_image":
			if p.ImageURL == "" {
				return nil, fmt.Errorf("content[%d]: input_image parts are translated only with an image_url", i)
			}
			src, err := imageSource(p.ImageURL)
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

// respOutputToBlocks converts a tool output: a string or a list of parts.
func respOutputToBlocks(raw json.RawMessage, ttl string) ([]antBlock, error) {
	var parts respContent
	if err := json.Unmarshal(raw, &parts); err != nil && len(raw) > 0 {
		return nil, fmt.Errorf("output: %w", err)
	}
	return respPartsToBlocks(parts, ttl)
}
