package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// An Anthropic client in front of a model an OpenAI provider serves only
// on /v1/responses: up-openai's one channel carries nothing else here, so
// /v1/messages for gpt-4o-mini rides the Responses translator.

// responsesOnlyPolicy is defaultPolicy with up-openai serving Responses
// only.
func responsesOnlyPolicy(p policy) testkit.Policy {
	out := defaultPolicy(p)
	up := out.Providers["up-openai"]
	up.Channels = nativeChannel("openai", "responses")
	out.Providers["up-openai"] = up
	return out
}

// claudeCodeParams is a request shaped as Claude Code sends one, adaptive
// thinking and a tool, without its cache_control markers: this pair loses
// the tools' one, so the default profile would refuse it (the golden case
// claude_code_turn translates them).
func claudeCodeParams(msgs []anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "gpt-4o-mini",
		MaxTokens: 4096,
		System:    []anthropic.TextBlockParam{{Text: "You are Claude Code."}},
		Messages:  msgs,
		Tools:     []anthropic.ToolUnionParam{anthropicWeatherTool()},
		Thinking:  anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
	}
}

// thinkingSignatures lists the message's thinking signatures.
func thinkingSignatures(m *anthropic.Message) []string {
	var out []string
	for _, b := range m.Content {
		if b.Type == "thinking" {
			out = append(out, b.Signature)
		}
	}
	return out
}

// mustToolUse is the message's tool_use block.
func mustToolUse(t *testing.T, m *anthropic.Message) *anthropic.ToolUseBlock {
	t.Helper()
	use := toolUse(m)
	if use == nil {
		t.Fatalf("no tool_use in %s", m.RawJSON())
	}
	return use
}

// TestTranslateAnthropicClientToResponses: three turns through
// anthropic-sdk-go, a tool call and its result, then a follow-up, with the
// reasoning carried back in thinking signatures and replayed statelessly
// (the fake refuses a reasoning item it cannot find), and usage exact.
func TestTranslateAnthropicClientToResponses(t *testing.T) {
	e := startWith(t, responsesOnlyPolicy)
	ctx := context.Background()
	client := e.anthropicClient(keyDefault)
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}
	var httpResp *http.Response
	got, err := client.Messages.New(ctx, claudeCodeParams(msgs), aoption.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	wantServedBy(t, httpResp, "up-openai", "anthropic_responses")
	call := mustToolUse(t, got)
	sigs := thinkingSignatures(got)
	if got.StopReason != "tool_use" || call.Name != "get_weather" || compactJSON(t, string(call.Input)) != weatherArgs ||
		len(sigs) != 1 || !strings.HasPrefix(sigs[0], "pistra.reasoning.v1:") {
		t.Fatalf("first turn %s", got.RawJSON())
	}
	up := lastCall(t, e.openai)
	for _, want := range []string{`"store":false`, `"include":["reasoning.encrypted_content"]`, `"strict":false`, `"summary":"auto"`} {
		if up.Path != "/v1/responses" || !bytes.Contains(up.Body, []byte(want)) {
			t.Errorf("upstream got %s without %s: %s", up.Path, want, up.Body)
		}
	}
	var r responses.Response
	replay(t, e.policy.OpenAI, up, &r)
	u := r.Usage
	if got.Usage.InputTokens+got.Usage.CacheReadInputTokens+got.Usage.CacheCreationInputTokens != u.InputTokens ||
		got.Usage.CacheReadInputTokens != u.InputTokensDetails.CachedTokens || got.Usage.OutputTokens != u.OutputTokens || u.InputTokens == 0 {
		t.Errorf("usage %+v from upstream %+v", got.Usage, u)
	}

	msgs = append(msgs, got.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "Sunny, 21C", false)))
	got, err = client.Messages.New(ctx, claudeCodeParams(msgs))
	if err != nil {
		t.Fatal(err)
	}
	if got.StopReason != "end_turn" || replyOf(got) == "" {
		t.Fatalf("second turn %s", got.RawJSON())
	}
	body := lastCall(t, e.openai).Body
	if !bytes.Contains(body, []byte(`"type":"reasoning"`)) || !bytes.Contains(body, []byte(`"call_id":"`+call.ID)) {
		t.Errorf("second upstream body lacks the replayed reasoning or the tool output: %s", body)
	}

	msgs = append(msgs, got.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And tomorrow?")))
	if got, err = client.Messages.New(ctx, claudeCodeParams(msgs)); err != nil || len(thinkingSignatures(got)) != 1 {
		t.Fatalf("third turn: %v %s", err, got.RawJSON())
	}
	if n := bytes.Count(lastCall(t, e.openai).Body, []byte(`"type":"reasoning"`)); n != 2 {
		t.Errorf("third upstream request replays %d reasoning items, want both earlier turns'", n)
	}
	if e.anthropic.Calls() != 0 {
		t.Errorf("the Anthropic upstream was called")
	}
}

// TestTranslateAnthropicClientToResponsesStream: the SDK's accumulator
// builds the thinking block with its signature, the tool call and the
// usage from the translated stream, and a second turn replays it.
func TestTranslateAnthropicClientToResponsesStream(t *testing.T) {
	e := startWith(t, responsesOnlyPolicy)
	client := e.anthropicClient(keyDefault)
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}
	msg, err := sdkclient.ReadMessage(client.Messages.NewStreaming(context.Background(), claudeCodeParams(msgs)))
	if err != nil {
		t.Fatal(err)
	}
	call := mustToolUse(t, &msg)
	if sigs := thinkingSignatures(&msg); msg.StopReason != "tool_use" || len(sigs) != 1 || !strings.HasPrefix(sigs[0], "pistra.reasoning.v1:") ||
		compactJSON(t, string(call.Input)) != weatherArgs || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("streamed tool turn %s", msg.RawJSON())
	}
	msgs = append(msgs, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "Sunny, 21C", false)))
	msg, err = sdkclient.ReadMessage(client.Messages.NewStreaming(context.Background(), claudeCodeParams(msgs)))
	if err != nil || msg.StopReason != "end_turn" || replyOf(&msg) == "" {
		t.Fatalf("streamed second turn: %v %s", err, msg.RawJSON())
	}
}

// TestTranslateAnthropicClientToResponsesStructured: output_config.format
// is carried as a strict text.format, and the answer validates.
func TestTranslateAnthropicClientToResponsesStructured(t *testing.T) {
	e := startWith(t, responsesOnlyPolicy)
	p := messageParams("gpt-4o-mini")
	p.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required": []string{"city"}, "additionalProperties": false,
	}}}
	client := e.anthropicClient(keyDefault)
	got, err := client.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		City *string `json:"city"`
	}
	dec := json.NewDecoder(strings.NewReader(replyOf(got)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil || out.City == nil {
		t.Errorf("structured answer %q: %v", replyOf(got), err)
	}
	if body := lastCall(t, e.openai).Body; !bytes.Contains(body, []byte(`"format":{"type":"json_schema","name":"structured_output"`)) {
		t.Errorf("upstream body %s", body)
	}
}
