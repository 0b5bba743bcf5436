package translate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pistra/pistra/runtime/meter"
)

// ResponsesToAnthropicResponse converts a Response object into an
// Anthropic message for an Anthropic client, and returns the usage it
// carried. model is the name the upstream was asked for; the model the
// upstream reports having served wins when it names one.
//
// Reasoning items become thinking blocks, their summaries as the text and
// their id and encrypted_content packed into the signature, which the
// client sends back unchanged; output_text and refusal parts become text
// blocks, function calls tool_use blocks with the arguments parsed. An
// incomplete response stops with max_tokens (max_output_tokens) or
// refusal (content_filter). Usage keeps every split.
func ResponsesToAnthropicResponse(body []byte, model string) ([]byte, meter.Usage, error) {
	var in respResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, meter.Usage{}, fmt.Errorf("responses response: %w", err)
	}
	if in.Object != "response" {
		return nil, meter.Usage{}, fmt.Errorf("responses response: object %q is not a response", in.Object)
	}
	if in.Status == "failed" && in.Error != nil {
		return nil, meter.Usage{}, fmt.Errorf("responses response: failed: %s: %s", in.Error.Code, in.Error.Message)
	}
	content := make([]antBlock, 0, len(in.Output))
	calls, refused := false, false
	for i := range in.Output {
		it := &in.Output[i]
		switch it.Type {
		case "reasoning":
			content = append(content, reasoningBlock(it))
		case "message":
			for _, p := range it.Content {
				refused = refused || p.Type == "refusal"
				if t := p.Text + p.Refusal; t != "" {
					content = append(content, antBlock{Type: "text", Text: t})
				}
			}
		case "function_call":
			input, err := argumentsToInput(it.Arguments)
			if err != nil {
				return nil, meter.Usage{}, fmt.Errorf("responses response: function call %s: %w", it.CallID, err)
			}
			calls = true
			content = append(content, antBlock{Type: "tool_use", ID: it.CallID, Name: it.Name, Input: input})
		}
	}
	usage := meter.ReadUsage(meter.ShapeResponses, in.Usage)
	out, err := marshal(antClientResponse[antFullUsage]{
		ID: messageID(in.ID), Type: "message", Role: "assistant", Model: cmp.Or(in.Model, model), Content: content,
		StopReason: antStopReason(in.IncompleteDetails, calls, refused), Usage: fullAnthropicUsage(usage),
	})
	if err != nil {
		return nil, meter.Usage{}, fmt.Errorf("anthropic response: %w", err)
	}
	return out, usage, nil
}

// reasoningBlock is a reasoning item as a thinking block. Without
// encrypted_content (an upstream that ignored include) the signature is
// empty, and the block is dropped from the next request.
func reasoningBlock(it *respItem) antBlock {
	var texts []string
	if it.Summary != nil {
		for _, p := range *it.Summary {
			texts = append(texts, p.Text)
		}
	}
	text := strings.Join(texts, "\n\n")
	b := antBlock{Type: "thinking", Thinking: &text}
	if it.EncryptedContent != "" {
		b.Signature = packReasoning(it.ID, it.EncryptedContent)
	}
	return b
}

// messageID is the Anthropic message id for a Response id.
func messageID(respID string) string { return "msg_" + strings.TrimPrefix(respID, "resp_") }

// antStopReason is the stop reason of a response: why it is incomplete,
// else tool_use when it calls a tool, else refusal or end_turn.
func antStopReason(incomplete *respIncomplete, calls, refused bool) string {
	switch {
	case incomplete != nil && incomplete.Reason == "max_output_tokens":
		return "max_tokens"
	case incomplete != nil && incomplete.Reason == "content_filter", refused:
		return "refusal"
	case calls:
		return "tool_use"
	}
	return "end_turn"
}

// antFullUsage is Anthropic usage with the cache writes and the thinking
// tokens split out.
type antFullUsage struct {
	InputTokens              uint64 `json:"input_tokens"`
	CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     uint64 `json:"cache_read_input_tokens"`
	OutputTokens             uint64 `json:"output_tokens"`
	OutputTokensDetails      struct {
		ThinkingTokens uint64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// fullAnthropicUsage renders usage for an Anthropic client: input_tokens
// excludes the cache reads and writes, which have their own counts.
func fullAnthropicUsage(u meter.Usage) antFullUsage {
	cached := min(u.CachedInputTokens+u.CacheCreationInputTokens, u.InputTokens)
	out := antFullUsage{
		InputTokens: u.InputTokens - cached, CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens,
	}
	out.OutputTokensDetails.ThinkingTokens = u.ReasoningTokens
	return out
}
