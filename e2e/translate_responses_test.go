package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// An OpenAI Responses client in front of Claude: up-anthropic speaks only
// Anthropic, so /v1/responses for claude-haiku-4-5 is translated.

// codexParams is a request as Codex sends one: stateless, asking for the
// encrypted reasoning back, with a function tool and a custom one.
func codexParams(input responses.ResponseInputParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "claude-haiku-4-5",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Tools: []responses.ToolUnionParam{
			responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object", "properties": weatherProperties, "required": []string{"city"}}, false),
			responses.ToolParamOfCustom("apply_patch"),
		},
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow, Summary: shared.ReasoningSummaryAuto},
		Store:     openai.Bool(false),
		Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
}

// replayItems is a response's output as the next request's input, as a
// stateless client sends it back.
func replayItems(t *testing.T, r *responses.Response) responses.ResponseInputParam {
	t.Helper()
	var out responses.ResponseInputParam
	for _, it := range r.Output {
		switch it.Type {
		case "reasoning":
			p := it.AsReasoning().ToParam()
			out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: &p})
		case "function_call":
			p := it.AsFunctionCall().ToParam()
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
		case "custom_tool_call":
			p := it.AsCustomToolCall().ToParam()
			out = append(out, responses.ResponseInputItemUnionParam{OfCustomToolCall: &p})
		case "message":
			p := it.AsMessage().ToParam()
			out = append(out, responses.ResponseInputItemUnionParam{OfOutputMessage: &p})
		default:
			t.Fatalf("output item %s", it.RawJSON())
		}
	}
	return out
}

func toolOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = openai.String(callID)
	return item
}

func userItem(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// signatures lists the thinking signatures of an Anthropic request body.
func signatures(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				Signature string `json:"signature"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == "thinking" {
				out = append(out, b.Signature)
			}
		}
	}
	return out
}

// TestTranslateResponsesClientToAnthropic: three stateless turns through
// openai-go's Responses client, a tool call, its output and a follow-up,
// with the reasoning replayed each time from encrypted_content, and the
// usage the upstream reported, every split kept.
func TestTranslateResponsesClientToAnthropic(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	client := e.openaiClient(keyDefault)
	input := responses.ResponseInputParam{userItem(prompt)}
	var httpResp *http.Response
	got, err := client.Responses.New(ctx, codexParams(input), option.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	wantServedBy(t, httpResp, "up-anthropic", "responses_anthropic")
	if got.Status != "completed" || len(got.Output) != 3 || got.Output[0].Type != "reasoning" || got.Output[2].Type != "function_call" {
		t.Fatalf("first turn %s", got.RawJSON())
	}
	call := got.Output[2].AsFunctionCall()
	if call.Name != "get_weather" || compactJSON(t, call.Arguments) != weatherArgs || !strings.HasPrefix(got.Output[0].EncryptedContent, "pistra.thinking.v1:") {
		t.Errorf("first turn %s", got.RawJSON())
	}
	up := lastCall(t, e.anthropic)
	if up.Path != "/v1/messages" || !bytes.Contains(up.Body, []byte(`"thinking":{"type":"adaptive","display":"summarized"}`)) {
		t.Errorf("upstream got %s %s", up.Path, up.Body)
	}
	var msg anthropic.Message
	replay(t, e.policy.Anthropic, up, &msg)
	u := msg.Usage
	if got.Usage.InputTokens == 0 || got.Usage.InputTokens != u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens ||
		got.Usage.OutputTokens != u.OutputTokens || got.Usage.InputTokensDetails.CachedTokens != u.CacheReadInputTokens ||
		got.Usage.TotalTokens != got.Usage.InputTokens+got.Usage.OutputTokens {
		t.Errorf("usage %+v from upstream %+v", got.Usage, u)
	}
	firstSig := msg.Content[0].Signature

	input = append(input, replayItems(t, got)...)
	input = append(input, toolOutput(call.CallID, "Sunny, 21C"))
	got, err = client.Responses.New(ctx, codexParams(input))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "completed" || got.OutputText() == "" {
		t.Fatalf("second turn %s", got.RawJSON())
	}
	body := lastCall(t, e.anthropic).Body
	if sigs := signatures(t, body); len(sigs) != 1 || sigs[0] != firstSig || !bytes.Contains(body, []byte(`"tool_use_id":"`+call.CallID)) {
		t.Errorf("second upstream body lacks the replayed thinking or tool result: %s", body)
	}

	input = append(input, replayItems(t, got)...)
	input = append(input, userItem("And tomorrow?"))
	if got, err = client.Responses.New(ctx, codexParams(input)); err != nil || got.Status != "completed" {
		t.Fatalf("third turn %v %s", err, got.RawJSON())
	}
	if sigs := signatures(t, lastCall(t, e.anthropic).Body); len(sigs) != 2 || sigs[0] != firstSig {
		t.Errorf("third upstream request carries thinking signatures %q, want both earlier turns'", sigs)
	}
	if e.openai.Calls() != 0 || e.backup.Calls() != 0 {
		t.Errorf("an OpenAI upstream was called")
	}
}

// TestTranslateResponsesCustomTool: a custom (freeform) tool call, as
// Codex's apply_patch, comes back as a custom_tool_call with its input
// whole, streamed and not.
func TestTranslateResponsesCustomTool(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	p := codexParams(responses.ResponseInputParam{userItem(prompt)})
	p.Reasoning = shared.ReasoningParam{} // Anthropic takes no forced tool with thinking on
	p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfCustomTool: &responses.ToolChoiceCustomParam{Name: "apply_patch"}}
	got, err := client.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Output) != 1 || got.Output[0].Type != "custom_tool_call" || got.Output[0].Name != "apply_patch" || got.Output[0].Input == "" {
		t.Fatalf("custom call %s", got.RawJSON())
	}
	completed := streamResponse(t, client, p)
	if len(completed.Output) != 1 || completed.Output[0].Type != "custom_tool_call" || completed.Output[0].Input != got.Output[0].Input {
		t.Errorf("streamed custom call %s, want input %q", completed.RawJSON(), got.Output[0].Input)
	}
}

// streamResponse streams p and returns the terminal event's response,
// checking the events the SDK read are in order and the text deltas add up
// to the answer's text.
func streamResponse(t *testing.T, client openai.Client, p responses.ResponseNewParams) responses.Response {
	t.Helper()
	stream := client.Responses.NewStreaming(context.Background(), p)
	var text strings.Builder
	var final responses.Response
	seq, terminal := int64(0), ""
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq || terminal != "" {
			t.Fatalf("event %s after %d events, terminal %q", ev.RawJSON(), seq, terminal)
		}
		seq++
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed", "response.incomplete", "response.failed":
			terminal, final = ev.Type, ev.Response
		}
	}
	if err := stream.Err(); err != nil || terminal == "" {
		t.Fatalf("stream: %v, terminal %q", err, terminal)
	}
	if text.String() != final.OutputText() {
		t.Errorf("deltas %q, final text %q", text.String(), final.OutputText())
	}
	return final
}

// TestTranslateResponsesStream: the streamed answer, a tool turn and a
// text turn, ends in response.completed with the items and usage the
// non-stream answer has.
func TestTranslateResponsesStream(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	input := responses.ResponseInputParam{userItem(prompt)}
	first := streamResponse(t, client, codexParams(input))
	if first.Status != "completed" || len(first.Output) != 3 || first.Output[2].Type != "function_call" ||
		compactJSON(t, first.Output[2].Arguments.OfString) != weatherArgs || first.Usage.InputTokens == 0 || first.Usage.OutputTokens == 0 {
		t.Fatalf("streamed tool turn %s", first.RawJSON())
	}
	input = append(input, replayItems(t, &first)...)
	input = append(input, toolOutput(first.Output[2].CallID, "Sunny, 21C"))
	second := streamResponse(t, client, codexParams(input))
	if second.Status != "completed" || second.OutputText() == "" || second.Usage.TotalTokens != second.Usage.InputTokens+second.Usage.OutputTokens {
		t.Errorf("streamed text turn %s", second.RawJSON())
	}
	text := streamResponse(t, client, responses.ResponseNewParams{Model: "claude-haiku-4-5", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}})
	if text.OutputText() != fakeprovider.ReplyText(prompt) {
		t.Errorf("streamed text %q", text.OutputText())
	}
}

// TestTranslateResponsesRefusesState: what needs a store of earlier
// responses is refused with a 400 naming the field, as the SDK surfaces it.
func TestTranslateResponsesRefusesState(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	withPrevious := responses.ResponseNewParams{Model: "claude-haiku-4-5", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		PreviousResponseID: openai.String("resp_earlier")}
	withReference := responses.ResponseNewParams{Model: "claude-haiku-4-5", Input: responses.ResponseNewParamsInputUnion{
		OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfItemReference("msg_earlier"), userItem(prompt)}}}
	for field, p := range map[string]responses.ResponseNewParams{"previous_response_id": withPrevious, "item_reference": withReference} {
		_, err := client.Responses.New(context.Background(), p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, field) {
			t.Errorf("%s: %v", field, err)
		}
	}
	if e.anthropic.Calls() != 0 {
		t.Errorf("a refused request reached the upstream")
	}
}
