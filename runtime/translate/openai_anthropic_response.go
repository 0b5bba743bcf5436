package translate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pistra/pistra/runtime/dialect/anthropic"
	"github.com/pistra/pistra/runtime/meter"
)

// AnthropicToOpenAIResponse converts an Anthropic message body into a
// chat.completion for an OpenAI client, and returns the usage it carried.
// model is the name the upstream was asked for; the model the upstream
// reports having served wins when it names one.
//
// Text blocks become content (concatenated, as Anthropic splits one answer
// into blocks around citations and tool calls), tool_use blocks become
// tool_calls with their ids and the input object as the arguments string.
// Thinking, redacted thinking, citations and server-tool blocks have no place
// in a chat completion and are dropped. The message id is kept as the
// completion id.
func AnthropicToOpenAIResponse(body []byte, model string) ([]byte, meter.Usage, error) {
	var in antResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, meter.Usage{}, fmt.Errorf("anthropic response: %w", err)
	}
	if in.Type != "message" {
		return nil, meter.Usage{}, fmt.Errorf("anthropic response: type %q is not a message", in.Type)
	}
	msg := oaiReplyMessage{Role: "assistant"}
	var text strings.Builder
	for _, b := range in.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args, err := inputToArguments(b.Input)
			if err != nil {
				return nil, meter.Usage{}, fmt.Errorf("anthropic response: tool_use %s: %w", b.ID, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, oaiToolCall{
				ID: b.ID, Type: "function", Function: oaiFunctionCall{Name: b.Name, Arguments: args},
			})
		}
	}
	// content is null on a turn that is only tool calls, as OpenAI sends it.
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	usage := meter.ReadUsage(meter.ShapeMessages, in.Usage)
	out, err := marshal(oaiCompletion{
		ID: in.ID, Object: "chat.completion", Created: now().Unix(), Model: cmp.Or(in.Model, model),
		Choices: []oaiChoice{{Message: msg, FinishReason: finishReason(in.StopReason)}},
		Usage:   openAIUsage(usage),
	})
	if err != nil {
		return nil, meter.Usage{}, fmt.Errorf("openai response: %w", err)
	}
	return out, usage, nil
}

// inputToArguments renders a tool_use input object as OpenAI's compact
// arguments string.
func inputToArguments(input json.RawMessage) (string, error) {
	if len(input) == 0 {
		return "{}", nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, input); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// finishReason maps an Anthropic stop_reason onto an OpenAI finish_reason.
// pause_turn (a server-tool loop paused) and an absent reason end the turn
// as far as an OpenAI client can tell, so they read as stop.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// AnthropicErrorToOpenAI converts an Anthropic error response into an OpenAI
// error body and status, keeping the upstream message. The Anthropic error
// type is kept as the code; 529 (overloaded), which OpenAI clients do not
// know, becomes 503.
func AnthropicErrorToOpenAI(status int, body []byte) (int, []byte) {
	return anthropicErrorToOpenAI(status, body, func(antType, _ string) string { return antType })
}

// anthropicErrorToOpenAI is AnthropicErrorToOpenAI with the OpenAI code
// named by code from the upstream's error type and message.
func anthropicErrorToOpenAI(status int, body []byte, code func(antType, message string) string) (int, []byte) {
	var in antError
	if json.Unmarshal(body, &in) != nil || in.Error.Message == "" {
		in.Error.Message = fallbackMessage(status, body)
	}
	typ := cmp.Or(in.Error.Type, anthropicErrorType(status))
	if status == anthropic.StatusOverloaded {
		status = 503
	}
	return status, openAIErrorBody(in.Error.Message, typ, code(in.Error.Type, in.Error.Message))
}

// openAIErrorBody renders an error in OpenAI's envelope: antType picks the
// OpenAI type, code (the upstream's own type, when it gave one) is kept.
func openAIErrorBody(message, antType, code string) []byte {
	out := oaiError{Error: oaiErrorBody{Message: message, Type: openAIErrorType(antType)}}
	if code != "" {
		out.Error.Code, _ = json.Marshal(code)
	}
	b, _ := marshal(out) // plain strings: cannot fail
	return b
}
