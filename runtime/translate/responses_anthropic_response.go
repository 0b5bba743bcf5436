package translate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pistra/pistra/runtime/meter"
)

// AnthropicToResponsesResponse converts an Anthropic message body into a
// Response object for a Responses client, and returns the usage it
// carried. model is the name the upstream was asked for; isCustom tells
// the client's custom tools.
//
// Each text block becomes a message item (as the stream gives it), thinking and
// redacted_thinking blocks become reasoning items (the thinking text as a
// summary, the block packed into encrypted_content for a stateless
// replay), tool_use blocks become function_call items, or custom_tool_call
// items for a custom tool. A max_tokens stop is status incomplete with
// reason max_output_tokens, a refusal incomplete with content_filter.
// Usage keeps every split: cache reads and writes inside input_tokens,
// thinking inside output_tokens.
func AnthropicToResponsesResponse(body []byte, model string, isCustom func(string) bool) ([]byte, meter.Usage, error) {
	var in antResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, meter.Usage{}, fmt.Errorf("anthropic response: %w", err)
	}
	if in.Type != "message" {
		return nil, meter.Usage{}, fmt.Errorf("anthropic response: type %q is not a message", in.Type)
	}
	out := make([]respItem, 0, len(in.Content))
	for i := range in.Content {
		b := &in.Content[i]
		item, err := blockToItem(b, itemID(in.ID, len(out)), isCustom)
		if err != nil {
			return nil, meter.Usage{}, fmt.Errorf("anthropic response: %w", err)
		}
		if item.Type != "" {
			out = append(out, item)
		}
	}
	usage := meter.ReadUsage(meter.ShapeMessages, in.Usage)
	status, incomplete := responseStatus(in.StopReason)
	u, _ := marshal(responsesUsage(usage)) // numbers only: cannot fail
	resp, err := marshal(respResponse{
		ID: responseID(in.ID), Object: "response", CreatedAt: now().Unix(), Status: status,
		IncompleteDetails: incomplete, Model: cmp.Or(in.Model, model), Output: out, Usage: u,
	})
	if err != nil {
		return nil, meter.Usage{}, fmt.Errorf("responses response: %w", err)
	}
	return resp, usage, nil
}

// blockToItem converts one content block; an item of no type is a block
// with no place in a Response (citations, server tools).
func blockToItem(b *antBlock, id string, isCustom func(string) bool) (respItem, error) {
	switch b.Type {
	case "text":
		return respItem{Type: "message", ID: "msg_" + id, Status: "completed", Role: "assistant",
			Content: respContent{{Type: "output_text", Text: b.Text, Annotations: json.RawMessage(`[]`)}}}, nil
	case "thinking", "redacted_thinking":
		return respItem{Type: "reasoning", ID: "rs_" + id, Summary: thinkingSummary(b), EncryptedContent: packThinking(b)}, nil
	case "tool_use":
		if isCustom(b.Name) {
			var in customInput
			if err := json.Unmarshal(b.Input, &in); err != nil {
				return respItem{}, fmt.Errorf("custom tool call %s: %w", b.ID, err)
			}
			return respItem{Type: "custom_tool_call", ID: "ctc_" + id, Status: "completed", CallID: b.ID, Name: b.Name, Input: in.Input}, nil
		}
		args, err := inputToArguments(b.Input)
		if err != nil {
			return respItem{}, fmt.Errorf("tool_use %s: %w", b.ID, err)
		}
		return respItem{Type: "function_call", ID: "fc_" + id, Status: "completed", CallID: b.ID, Name: b.Name, Arguments: args}, nil
	}
	return respItem{}, nil
}

// responseID is the Response id for an Anthropic message id.
func responseID(msgID string) string { return "resp_" + strings.TrimPrefix(msgID, "msg_") }

// itemID is the id suffix of output item n of message msgID; the item
// type's prefix goes before it.
func itemID(msgID string, n int) string {
	return strings.TrimPrefix(msgID, "msg_") + "_" + strconv.Itoa(n)
}

// responseStatus maps a stop reason onto a Response status.
func responseStatus(stop string) (string, *respIncomplete) {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "incomplete", &respIncomplete{Reason: "max_output_tokens"}
	case "refusal":
		return "incomplete", &respIncomplete{Reason: "content_filter"}
	}
	return "completed", nil
}

// responsesUsage renders usage for a Responses client, which has a place
// for every split.
func responsesUsage(u meter.Usage) respUsage {
	return respUsage{
		InputTokens:         u.InputTokens,
		InputTokensDetails:  respInputDetails{CachedTokens: u.CachedInputTokens, CacheWriteTokens: u.CacheCreationInputTokens},
		OutputTokens:        u.OutputTokens,
		OutputTokensDetails: respOutputDetails{ReasoningTokens: u.ReasoningTokens},
		TotalTokens:         u.TotalTokens,
	}
}

// AnthropicErrorToResponses converts an Anthropic error answer as the
// chat pair does, with the code a Responses client classifies by (Codex
// retries some and not others) where OpenAI has one.
func AnthropicErrorToResponses(status int, body []byte) (int, []byte) {
	return anthropicErrorToOpenAI(status, body, func(antType, message string) string {
		return cmp.Or(responsesErrorCode(antType, message), antType)
	})
}

// responsesErrorCode names an Anthropic error in the codes OpenAI's
// Responses API uses, "" when it has none.
func responsesErrorCode(antType, message string) string {
	switch {
	case antType == "overloaded_error":
		return "server_is_overloaded"
	case antType == "rate_limit_error":
		return "rate_limit_exceeded"
	case antType == "billing_error":
		return "insufficient_quota"
	case strings.Contains(message, "prompt is too long"), strings.Contains(message, "context window"):
		return "context_length_exceeded"
	case antType == "api_error", antType == "timeout_error":
		return "server_error"
	}
	return ""
}
