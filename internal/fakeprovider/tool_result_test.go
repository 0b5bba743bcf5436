package fakeprovider_test

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/fakeprovider"
)

const toolOutput = "Sunny, 21C"

// A tool result is answered in text, echoing the user's words (the tool's
// output is not theirs), unless tool_choice forces another call.

func TestChatAnswersToolResult(t *testing.T) {
	_, client := startOpenAI(t)
	p := chatParams(question)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
	first, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil || len(first.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("first turn: %v %+v, want a tool call", err, first)
	}
	call := first.Choices[0].Message.ToolCalls[0]
	p.Messages = append(p.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage(toolOutput, call.ID))
	resp, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("after the tool result: %v", err)
	}
	acc, _ := streamChat(t, client, p)
	for _, got := range []openai.ChatCompletion{*resp, acc.ChatCompletion} {
		c := got.Choices[0]
		if c.Message.Content != fakeprovider.ReplyText(question) || len(c.Message.ToolCalls) != 0 || c.FinishReason != "stop" {
			t.Errorf("answer %q, %d tool calls, finish %q; want the text reply, stop", c.Message.Content, len(c.Message.ToolCalls), c.FinishReason)
		}
	}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	forced, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil || len(forced.Choices[0].Message.ToolCalls) != 1 || forced.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("forced after the tool result: %v %+v, want another call", err, forced)
	}
}

func TestResponsesAnswersToolResult(t *testing.T) {
	_, client := startOpenAI(t)
	params := responses.ResponseNewParams{Model: "gpt-4.1-mini", Tools: []responses.ToolUnionParam{weatherFunction()},
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(question)}}
	first, err := client.Responses.New(context.Background(), params)
	if err != nil || len(first.Output) != 1 || first.Output[0].Type != "function_call" {
		t.Fatalf("first turn: %v %s, want a function call", err, first.RawJSON())
	}
	call := first.Output[0]
	output := responses.ResponseInputItemParamOfFunctionCallOutput(toolOutput)
	output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage(question, responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments.OfString, call.CallID, call.Name),
		output,
	}}
	resp, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatalf("after the tool result: %v", err)
	}
	checkResponse(t, resp, "completed", fakeprovider.ReplyText(question), false, false)
	checkResponse(t, streamResponse(t, client, params), "completed", fakeprovider.ReplyText(question), false, false)
}

func TestMessagesAnswerToolResult(t *testing.T) {
	_, client, _ := startAnthropic(t)
	p := messageParams(question)
	p.Tools = []anthropic.ToolUnionParam{weatherToolParam()}
	first, err := client.Messages.New(context.Background(), p)
	if err != nil || first.StopReason != "tool_use" {
		t.Fatalf("first turn: %v %+v, want a tool call", err, first)
	}
	use := first.Content[len(first.Content)-1]
	p.Messages = append(p.Messages, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, toolOutput, false)))
	msg, err := client.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatalf("after the tool result: %v", err)
	}
	checkMessage(t, msg, []string{"text"}, fakeprovider.ReplyText(question), "end_turn", false)
	checkMessage(t, streamMessage(t, client, p), []string{"text"}, fakeprovider.ReplyText(question), "end_turn", false)
	p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	forced, err := client.Messages.New(context.Background(), p)
	if err != nil || forced.StopReason != "tool_use" {
		t.Errorf("forced after the tool result: %v %+v, want another call", err, forced)
	}
}
