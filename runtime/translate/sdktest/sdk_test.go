// Package sdktest puts the official OpenAI and Anthropic Go SDKs in front of
// the translators: a server on 127.0.0.1 translates the SDK's own request
// (which must succeed) and answers with a translated upstream fixture, so the
// SDKs' decoders and stream accumulators judge the output. It lives apart
// from package translate so that fuzzing translate does not instrument the
// SDKs, which slows fuzzing to a crawl.
package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/testkit/sdkclient"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/translate"
)

// pair is one translation direction, client dialect first.
type pair struct {
	name          string
	request       func(dst, body []byte, o translate.Options) ([]byte, bool, error)
	response      func([]byte, string) ([]byte, meter.Usage, error)
	error         func(int, []byte) (int, []byte)
	stream        func(w io.Writer, model string, includeUsage bool) translate.Stream
	upstreamModel string
}

var (
	openAIClientPair = pair{
		name: "openai_anthropic", request: translate.OpenAIToAnthropicRequest,
		response: translate.AnthropicToOpenAIResponse, error: translate.AnthropicErrorToOpenAI,
		stream: translate.NewAnthropicToOpenAIStream, upstreamModel: "claude-sonnet-4-5-20250929",
	}
	anthropicClientPair = pair{
		name: "anthropic_openai", request: translate.AnthropicToOpenAIRequest,
		response: translate.OpenAIToAnthropicResponse, error: translate.OpenAIErrorToAnthropic,
		stream: func(w io.Writer, model string, _ bool) translate.Stream {
			return translate.NewOpenAIToAnthropicStream(w, model)
		},
		upstreamModel: "gpt-4o-2024-08-06",
	}
)

// fixture is the upstream answer a fake server translates for the client.
type fixture struct {
	status int    // upstream status; 0 for a success
	file   string // upstream fixture under testdata/<pair>/
}

// serve starts a server that translates requests with p and answers with f.
func serve(t *testing.T, p pair, f fixture, translated *[]byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		out, stream, err := p.request(nil, body, translate.Options{UpstreamModel: p.upstreamModel, DefaultMaxTokens: 1024})
		if err != nil {
			t.Errorf("translating the SDK's request: %v\n%s", err, body)
		}
		*translated = out
		upstream, err := os.ReadFile(filepath.Join("..", "testdata", p.name, f.file))
		if err != nil {
			t.Error(err)
		}
		switch {
		case f.status != 0:
			var in struct{ Body json.RawMessage }
			_ = json.Unmarshal(upstream, &in) // error fixtures wrap the body
			status, errBody := p.error(f.status, in.Body)
			w.WriteHeader(status)
			_, _ = w.Write(errBody)
		case stream:
			w.Header().Set("Content-Type", "text/event-stream")
			s := p.stream(w, p.upstreamModel, askedUsage(body))
			_, _ = s.Write(upstream)
			_ = s.Close()
		default:
			resp, _, err := p.response(upstream, p.upstreamModel)
			if err != nil {
				t.Errorf("translating the response: %v", err)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(resp)
		}
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// openAIClient is an OpenAI SDK client of the server at url.
func openAIClient(url string) *openai.Client {
	c := sdkclient.OpenAI(url+"/v1", "sk-test")
	return &c
}

func openAIParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "claude-sonnet",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."), openai.UserMessage("Weather in Paris and Tokyo?"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:       "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
		MaxCompletionTokens: openai.Int(300),
	}
}

func TestOpenAISDKNonStream(t *testing.T) {
	var sent []byte
	url := serve(t, openAIClientPair, fixture{file: "response/tool_use_thinking/in.json"}, &sent)
	got, err := openAIClient(url).Chat.Completions.New(context.Background(), openAIParams())
	if err != nil {
		t.Fatal(err)
	}
	var upstream struct {
		System []json.RawMessage `json:"system"`
		Tools  []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(sent, &upstream); err != nil || len(upstream.System) != 1 || len(upstream.Tools) != 1 {
		t.Errorf("translated request lost system or tools: %s", sent)
	}
	msg := got.Choices[0].Message
	if got.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 2 || msg.Content != "I'll check both cities." {
		t.Fatalf("unexpected completion: %+v", got)
	}
	var args struct{ City string }
	if err := json.Unmarshal([]byte(msg.ToolCalls[1].Function.Arguments), &args); err != nil || args.City != "Tokyo" {
		t.Errorf("arguments %q: %v", msg.ToolCalls[1].Function.Arguments, err)
	}
	if msg.ToolCalls[0].ID != "toolu_01A09q90qw90lq917835lq9" || got.Model != openAIClientPair.upstreamModel {
		t.Errorf("id %q, model %q", msg.ToolCalls[0].ID, got.Model)
	}
	if got.Usage.PromptTokens != 512 || got.Usage.CompletionTokens != 140 || got.Usage.TotalTokens != 652 {
		t.Errorf("usage %+v", got.Usage)
	}
}

func TestOpenAISDKStreamAccumulates(t *testing.T) {
	var sent []byte
	url := serve(t, openAIClientPair, fixture{file: "stream/tool_calls/in.sse"}, &sent)
	params := openAIParams()
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := openAIClient(url).Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	msg := acc.Choices[0].Message
	if acc.Choices[0].FinishReason != "tool_calls" || msg.Content != "Checking both." || len(msg.ToolCalls) != 2 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
	want := []string{`{"city": "Paris", "unit": "celsius"}`, `{"city": "Tokyo", "unit": "celsius"}`}
	for i, c := range msg.ToolCalls {
		if c.Function.Arguments != want[i] || c.Function.Name != "get_weather" {
			t.Errorf("tool call %d: %+v", i, c.Function)
		}
	}
	if acc.Usage.PromptTokens != 512 || acc.Usage.CompletionTokens != 96 {
		t.Errorf("usage %+v", acc.Usage)
	}
}

func TestOpenAISDKErrors(t *testing.T) {
	var sent []byte
	url := serve(t, openAIClientPair, fixture{status: 529, file: "error/overloaded_529/in.json"}, &sent)
	_, err := openAIClient(url).Chat.Completions.New(context.Background(), openAIParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "overloaded_error" {
		t.Errorf("want a 503 openai.Error with code overloaded_error, got %v", err)
	}

	url = serve(t, openAIClientPair, fixture{file: "stream/error_midstream/in.sse"}, &sent)
	stream := openAIClient(url).Chat.Completions.NewStreaming(context.Background(), openAIParams())
	for stream.Next() {
	}
	var streamErr *ssestream.StreamError
	if !errors.As(stream.Err(), &streamErr) {
		t.Errorf("want a stream error, got %v", stream.Err())
	}
}

// anthropicClient is an Anthropic SDK client of the server at url.
func anthropicClient(url string) *anthropic.Client {
	c := sdkclient.Anthropic(url+"/v1", "sk-ant-test")
	return &c
}

func anthropicParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "gpt-4o",
		MaxTokens: 300,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}},
		}, "get_weather")},
	}
}

func TestAnthropicSDKNonStream(t *testing.T) {
	var sent []byte
	url := serve(t, anthropicClientPair, fixture{file: "response/tool_calls/in.json"}, &sent)
	got, err := anthropicClient(url).Messages.New(context.Background(), anthropicParams())
	if err != nil {
		t.Fatal(err)
	}
	var upstream struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(sent, &upstream); err != nil || len(upstream.Messages) != 2 || len(upstream.Tools) != 1 {
		t.Errorf("translated request lost system or tools: %s", sent)
	}
	if got.StopReason != anthropic.StopReasonToolUse || len(got.Content) != 2 || got.Model != anthropicClientPair.upstreamModel {
		t.Fatalf("unexpected message: %+v", got)
	}
	tool := got.Content[1].AsToolUse()
	if tool.ID != "call_def456" || string(tool.Input) != `{"city":"Tokyo"}` {
		t.Errorf("tool_use %s %s", tool.ID, tool.Input)
	}
	if got.Usage.InputTokens != 80 || got.Usage.OutputTokens != 40 {
		t.Errorf("usage %+v", got.Usage)
	}
}

func TestAnthropicSDKStreamAccumulates(t *testing.T) {
	cases := []struct {
		file  string
		check func(t *testing.T, m anthropic.Message)
	}{
		{"stream/text_with_usage/in.sse", func(t *testing.T, m anthropic.Message) {
			if m.StopReason != anthropic.StopReasonEndTurn || len(m.Content) != 1 || m.Content[0].Text != "Hello, wörld! \"q\"\n" {
				t.Errorf("accumulated %+v", m)
			}
			if u := m.Usage; u.InputTokens != 93 || u.CacheReadInputTokens != 1024 || u.OutputTokens != 46 {
				t.Errorf("usage %+v", u)
			}
		}},
		{"stream/tool_calls/in.sse", func(t *testing.T, m anthropic.Message) {
			if m.StopReason != anthropic.StopReasonToolUse || len(m.Content) != 2 {
				t.Fatalf("accumulated %+v", m)
			}
			if in := m.Content[0].AsToolUse(); in.ID != "call_abc123" || string(in.Input) != `{"city":"Paris"}` {
				t.Errorf("tool_use %s %s", in.ID, in.Input)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			var sent []byte
			params := anthropicParams()
			stream := anthropicClient(serve(t, anthropicClientPair, fixture{file: c.file}, &sent)).Messages.NewStreaming(context.Background(), params)
			msg, err := sdkclient.ReadMessage(stream)
			if err != nil {
				t.Fatal(err)
			}
			if !askedUsage(sent) {
				t.Errorf("translated stream request does not ask for usage: %s", sent)
			}
			c.check(t, msg)
		})
	}
}

func TestAnthropicSDKErrors(t *testing.T) {
	var sent []byte
	url := serve(t, anthropicClientPair, fixture{status: 429, file: "error/rate_limit_429/in.json"}, &sent)
	_, err := anthropicClient(url).Messages.New(context.Background(), anthropicParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Type() != "rate_limit_error" {
		t.Errorf("want a 429 rate_limit_error, got %v", err)
	}

	url = serve(t, anthropicClientPair, fixture{file: "stream/error_midstream/in.sse"}, &sent)
	stream := anthropicClient(url).Messages.NewStreaming(context.Background(), anthropicParams())
	for stream.Next() {
	}
	if !errors.As(stream.Err(), &apiErr) || apiErr.Type() != "api_error" {
		t.Errorf("want an api_error from the stream, got %v", stream.Err())
	}
}

// askedUsage reports whether a chat body asks for its usage chunk, as the
// gateway reads it.
func askedUsage(body []byte) bool {
	h, err := dialect.ReadHead(body)
	return err == nil && h.Stream.AskedUsage
}
