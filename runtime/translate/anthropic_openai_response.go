package translate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pistra/pistra/runtime/meter"
)

// OpenAIToAnthropicResponse converts a chat.completion body into an
// Anthropic message for an Anthropic client, and returns the usage it
// carried. model is the name the upstream was asked for; the model the
// upstream reports having served wins when it names one.
//
// The first choice is used (the request never asks for more). Content and
// refusal text become a text block, tool_calls become tool_use blocks with
// their ids and the arguments string parsed into the input object. The
// completion id is kept as the message id.
func OpenAIToAnthropicResponse(body []byte, model string) ([]byte, meter.Usage, error) {
	var in oaiAnswer
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, meter.Usage{}, fmt.Errorf("openai response: %w", err)
	}
	if len(in.Choices) == 0 {
		return nil, meter.Usage{}, errors.New("openai response: no choices")
	}
	choice := &in.Choices[0]
	content := make([]antBlock, 0, 1+len(choice.Message.ToolCalls))
	for _, s := range []*string{choice.Message.Content, choice.Message.Refusal} {
		if s != nil && *s != "" {
			content = append(content, antBlock{Type: "text", Text: *s})
		}
	}
	for _, c := range choice.Message.ToolCalls {
		input, err := argumentsToInput(c.Function.Arguments)
		if err != nil {
			return nil, meter.Usage{}, fmt.Errorf("openai response: tool call %s: %w", c.ID, err)
		}
		content = append(content, antBlock{Type: "tool_use", ID: c.ID, Name: c.Function.Name, Input: input})
	}
	usage := meter.ReadUsage(meter.ShapeChat, in.Usage)
	refused := choice.Message.Refusal != nil && *choice.Message.Refusal != ""
	stop, seq := stopReason(choice.FinishReason, choice.StopReason, len(choice.Message.ToolCalls) > 0, refused)
	out, err := marshal(antClientResponse[antClientUsage]{
		ID: in.ID, Type: "message", Role: "assistant", Model: cmp.Or(in.Model, model), Content: content,
		StopReason: stop, StopSequence: seq, Usage: anthropicUsage(usage),
	})
	if err != nil {
		return nil, meter.Usage{}, fmt.Errorf("anthropic response: %w", err)
	}
	return out, usage, nil
}

// stopReason maps an OpenAI finish_reason onto an Anthropic stop_reason.
// A turn with tool calls is tool_use whatever the finish reason, because
// OpenAI reports a call forced by a named tool_choice as "stop". A stop
// caused by a stop sequence is told apart where the server says which one
// (vLLM's stop_reason holds the matched string); OpenAI itself does not.
func stopReason(finish string, vllmStop json.RawMessage, toolCalls, refused bool) (string, *string) {
	switch {
	case toolCalls || finish == "tool_calls" || finish == "function_call":
		return "tool_use", nil
	case finish == "length":
		return "max_tokens", nil
	case finish == "content_filter" || refused:
		return "refusal", nil
	}
	var seq string
	if len(vllmStop) > 0 && vllmStop[0] == '"' && json.Unmarshal(vllmStop, &seq) == nil && seq != "" {
		return "stop_sequence", &seq
	}
	return "end_turn", nil
}

// OpenAIErrorToAnthropic converts an OpenAI error response into an Anthropic
// error body and status, keeping the upstream message. The Anthropic error
// type follows the status, as Anthropic's do.
func OpenAIErrorToAnthropic(status int, body []byte) (int, []byte) {
	var in oaiError
	if json.Unmarshal(body, &in) != nil || in.Error.Message == "" {
		in.Error.Message = fallbackMessage(status, body)
	}
	return status, anthropicErrorBody(anthropicErrorType(status), in.Error.Message)
}

// anthropicErrorBody renders an Anthropic error envelope.
func anthropicErrorBody(typ, message string) []byte {
	b, _ := marshal(antError{Type: "error", Error: antErrorBody{Type: typ, Message: message}})
	return b // plain strings: cannot fail
}
