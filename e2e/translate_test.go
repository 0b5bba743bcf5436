package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// In the standard policy up-anthropic speaks only Anthropic and up-openai
// only OpenAI, so an OpenAI client asking for claude-haiku-4-5 and an
// Anthropic client asking for gpt-4o-mini are served through a translator.

// weatherArgs is what the fake calls get_weather with: its schema's one
// string property, filled in.
const weatherArgs = `{"city":"example"}`

var weatherProperties = map[string]any{"city": map[string]any{"type": "string"}}

func openaiWeatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:       "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": weatherProperties, "required": []string{"city"}},
	})
}

func anthropicWeatherTool() anthropic.ToolUnionParam {
	return anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: weatherProperties, Required: []string{"city"}}, "get_weather")
}

// compactJSON lets tool arguments be compared whatever their spacing.
func compactJSON(t *testing.T, raw string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return b.String()
}

// wantServedBy checks the gateway's headers name the translated path.
func wantServedBy(t *testing.T, resp *http.Response, provider, pair string) {
	t.Helper()
	if resp.Header.Get("Pistra-Provider") != provider || resp.Header.Get("Pistra-Channel-Origin") != "translation:"+pair {
		t.Errorf("served by %q via %q, want %s via translation:%s", resp.Header.Get("Pistra-Provider"),
			resp.Header.Get("Pistra-Channel-Origin"), provider, pair)
	}
}

// replay sends a recorded upstream request to the fake again, to read the
// usage the fake reported for it; the fake's usage depends on the body only.
func replay(t *testing.T, baseURL string, call fakeprovider.Recorded, into any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(baseURL, "/v1")+call.Path, bytes.NewReader(call.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = call.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil || resp.StatusCode != 200 {
		t.Fatalf("replay: %d %v", resp.StatusCode, err)
	}
}

// TestTranslateOpenAIClientToAnthropic: a chat completion, then a tool call
// and its result sent back, served by the Anthropic-only provider.
func TestTranslateOpenAIClientToAnthropic(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	client := e.openaiClient(keyDefault)
	var resp *http.Response
	got, err := client.Chat.Completions.New(ctx, chatParams("claude-haiku-4-5"),
		option.WithResponseInto(&resp), option.WithHeader("OpenAI-Organization", "org-e2e"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "claude-haiku-4-5" || got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion %s", got.RawJSON())
	}
	wantServedBy(t, resp, "up-anthropic", "openai_anthropic")
	call := lastCall(t, e.anthropic)
	if call.Path != "/v1/messages" || call.Model != "claude-haiku-4-5" || !bytes.Contains(call.Body, []byte(`"max_tokens":8192`)) {
		t.Errorf("upstream got %s %s", call.Path, call.Body)
	}
	if call.Header.Get("X-Api-Key") != secretAnthropic || call.Header.Get("Authorization") != "" ||
		call.Header.Get("Anthropic-Version") != "2023-06-01" || call.Header.Get("Openai-Organization") != "" {
		t.Errorf("upstream headers: wrong credential, version or an OpenAI header forwarded: %v", call.Header.Get("Anthropic-Version"))
	}
	var up anthropic.Message
	replay(t, e.policy.Anthropic, call, &up)
	u := up.Usage
	if got.Usage.PromptTokens == 0 || got.Usage.PromptTokens != u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens ||
		got.Usage.CompletionTokens != u.OutputTokens || got.Usage.PromptTokensDetails.CachedTokens != u.CacheReadInputTokens {
		t.Errorf("usage %+v from upstream %+v", got.Usage, u)
	}
	wantLogged := fmt.Sprintf(`"usage_from":"translator","input_tokens":%d,"output_tokens":%d`, got.Usage.PromptTokens, got.Usage.CompletionTokens)
	if !strings.Contains(e.logs.String(), wantLogged) {
		t.Errorf("request log lacks the translator's usage %s", wantLogged)
	}

	p := chatParams("claude-haiku-4-5")
	p.Tools = []openai.ChatCompletionToolUnionParam{openaiWeatherTool()}
	got, err = client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	calls := got.Choices[0].Message.ToolCalls
	if got.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" ||
		compactJSON(t, calls[0].Function.Arguments) != weatherArgs || !strings.HasPrefix(calls[0].ID, "toolu_") {
		t.Fatalf("tool turn %s", got.RawJSON())
	}
	p.Messages = append(p.Messages, got.Choices[0].Message.ToParam(), openai.ToolMessage("Sunny, 21C", calls[0].ID))
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	got, err = client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].FinishReason != "stop" || got.Choices[0].Message.Content == "" {
		t.Errorf("answer after the tool result %s", got.RawJSON())
	}
	body := lastCall(t, e.anthropic).Body
	for _, want := range []string{`"type":"tool_use","id":"` + calls[0].ID, `"tool_use_id":"` + calls[0].ID, `"Sunny, 21C"`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("upstream body lacks %s: %s", want, body)
		}
	}
	if e.openai.Calls() != 0 || e.backup.Calls() != 0 {
		t.Errorf("an OpenAI upstream was called")
	}
}

// TestTranslateOpenAIClientStream: the SDK's accumulator builds the right
// message from translated chunks, with usage only when asked for.
func TestTranslateOpenAIClientStream(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	for _, tt := range []struct {
		name                string
		tools, includeUsage bool
	}{{"text", false, false}, {"text with usage", false, true}, {"tool call with usage", true, true}} {
		t.Run(tt.name, func(t *testing.T) {
			p := chatParams("claude-haiku-4-5")
			if tt.includeUsage {
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			if tt.tools {
				p.Tools = []openai.ChatCompletionToolUnionParam{openaiWeatherTool()}
			}
			stream := client.Chat.Completions.NewStreaming(context.Background(), p)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			choice := acc.Choices[0]
			switch {
			case acc.Model != "claude-haiku-4-5":
				t.Errorf("model %q", acc.Model)
			case tt.tools && (choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 ||
				compactJSON(t, choice.Message.ToolCalls[0].Function.Arguments) != weatherArgs):
				t.Errorf("tool turn %+v", choice)
			case !tt.tools && (choice.FinishReason != "stop" || choice.Message.Content != fakeprovider.ReplyText(prompt)):
				t.Errorf("text turn %+v", choice)
			}
			if (acc.Usage.TotalTokens > 0) != tt.includeUsage || acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens {
				t.Errorf("include_usage=%v: usage %+v", tt.includeUsage, acc.Usage)
			}
			if body := lastCall(t, e.anthropic).Body; !bytes.Contains(body, []byte(`"stream":true`)) || bytes.Contains(body, []byte("stream_options")) {
				t.Errorf("upstream body %s", body)
			}
		})
	}
}

// TestTranslateAnthropicClientToOpenAI: a message, then a tool forced by
// name (which OpenAI finishes with "stop") and its result sent back, served
// by the OpenAI-only provider.
func TestTranslateAnthropicClientToOpenAI(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	client := e.anthropicClient(keyDefault)
	var resp *http.Response
	got, err := client.Messages.New(ctx, messageParams("gpt-4o-mini"),
		aoption.WithResponseInto(&resp), aoption.WithHeader("Anthropic-Beta", "e2e-beta-1"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "gpt-4o-mini" || replyOf(got) != fakeprovider.ReplyText(prompt) || got.StopReason != "end_turn" || resp.Header.Get("Request-Id") == "" {
		t.Fatalf("message %s", got.RawJSON())
	}
	wantServedBy(t, resp, "up-openai", "anthropic_openai")
	call := lastCall(t, e.openai)
	if call.Path != "/v1/chat/completions" || call.Model != "gpt-4o-mini" || !bytes.Contains(call.Body, []byte(`"max_completion_tokens":256`)) {
		t.Errorf("upstream got %s %s", call.Path, call.Body)
	}
	if call.Header.Get("Authorization") != "Bearer "+secretOpenAI || call.Header.Get("X-Api-Key") != "" ||
		call.Header.Get("Anthropic-Version") != "" || call.Header.Get("Anthropic-Beta") != "" {
		t.Errorf("upstream headers: wrong credential or an Anthropic header forwarded")
	}
	var up openai.ChatCompletion
	replay(t, e.policy.OpenAI, call, &up)
	cached := up.Usage.PromptTokensDetails.CachedTokens
	if got.Usage.InputTokens == 0 || got.Usage.InputTokens != up.Usage.PromptTokens-cached || got.Usage.CacheReadInputTokens != cached || got.Usage.OutputTokens != up.Usage.CompletionTokens {
		t.Errorf("usage %+v from upstream %+v", got.Usage, up.Usage)
	}

	p := messageParams("gpt-4o-mini")
	p.Tools = []anthropic.ToolUnionParam{anthropicWeatherTool()}
	p.ToolChoice = anthropic.ToolChoiceParamOfTool("get_weather")
	got, err = client.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	use := toolUse(got)
	if got.StopReason != "tool_use" || use == nil || use.Name != "get_weather" || compactJSON(t, string(use.Input)) != weatherArgs || !strings.HasPrefix(use.ID, "call_") {
		t.Fatalf("tool turn %s", got.RawJSON())
	}
	p.Messages = append(p.Messages, got.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "Sunny, 21C", false)))
	p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	if got, err = client.Messages.New(ctx, p); err != nil || got.StopReason != "end_turn" {
		t.Fatalf("answer after the tool result: %v %+v", err, got)
	}
	body := lastCall(t, e.openai).Body
	for _, want := range []string{`"tool_calls":[{"id":"` + use.ID, `"role":"tool"`, `"tool_call_id":"` + use.ID} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("upstream body lacks %s: %s", want, body)
		}
	}
}

func toolUse(m *anthropic.Message) *anthropic.ToolUseBlock {
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			use := b.AsToolUse()
			return &use
		}
	}
	return nil
}

// TestTranslateAnthropicClientStream: Message.Accumulate builds the right
// message from translated events, usage included.
func TestTranslateAnthropicClientStream(t *testing.T) {
	e := start(t)
	client := e.anthropicXAPIKeyClient(keyDefault)
	for _, tools := range []bool{false, true} {
		p := messageParams("gpt-4o-mini")
		if tools {
			p.Tools = []anthropic.ToolUnionParam{anthropicWeatherTool()}
		}
		msg, err := sdkclient.ReadMessage(client.Messages.NewStreaming(context.Background(), p))
		if err != nil {
			t.Fatal(err)
		}
		if msg.Model != "gpt-4o-mini" || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
			t.Errorf("tools=%v: model %q usage %+v", tools, msg.Model, msg.Usage)
		}
		if use := toolUse(&msg); tools && (msg.StopReason != "tool_use" || use == nil || compactJSON(t, string(use.Input)) != weatherArgs) {
			t.Errorf("tool turn %s", msg.RawJSON())
		}
		if !tools && (msg.StopReason != "end_turn" || replyOf(&msg) != fakeprovider.ReplyText(prompt)) {
			t.Errorf("text turn %q stop %q", replyOf(&msg), msg.StopReason)
		}
		if body := lastCall(t, e.openai).Body; !bytes.Contains(body, []byte(`"include_usage":true`)) {
			t.Errorf("upstream body %s", body)
		}
	}
}
