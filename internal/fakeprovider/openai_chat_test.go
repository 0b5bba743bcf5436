package fakeprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

const question = "Is it sunny in Paris today"

func chatParams(content string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(content)},
	}
}

func checkChatUsage(t *testing.T, u openai.CompletionUsage) {
	t.Helper()
	if u.PromptTokens < 1 || u.CompletionTokens < 1 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %d prompt + %d completion = %d total: want positive counts that add up",
			u.PromptTokens, u.CompletionTokens, u.TotalTokens)
	}
	if u.PromptTokensDetails.CachedTokens > u.PromptTokens {
		t.Errorf("cached tokens %d exceed prompt tokens %d", u.PromptTokensDetails.CachedTokens, u.PromptTokens)
	}
	if u.CompletionTokensDetails.ReasoningTokens > u.CompletionTokens {
		t.Errorf("reasoning tokens %d exceed completion tokens %d", u.CompletionTokensDetails.ReasoningTokens, u.CompletionTokens)
	}
}

func TestChatCompletion(t *testing.T) {
	_, client := startOpenAI(t)
	var raw *http.Response
	resp, err := client.Chat.Completions.New(context.Background(), chatParams(question), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" {
		t.Errorf("id %q object %q: want a chatcmpl- id and chat.completion", resp.ID, resp.Object)
	}
	if raw.Header.Get("x-request-id") == "" {
		t.Error("response has no x-request-id")
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("got %d choices, want 1", len(resp.Choices))
	}
	got := resp.Choices[0]
	if got.Message.Content != fakeprovider.ReplyText(question) || !strings.Contains(got.Message.Content, "Paris") {
		t.Errorf("content %q: want the reply echoing the question", got.Message.Content)
	}
	if got.FinishReason != "stop" {
		t.Errorf("finish reason %q, want stop", got.FinishReason)
	}
	checkChatUsage(t, resp.Usage)
	if int(resp.Usage.CompletionTokens) != len(strings.Fields(got.Message.Content)) {
		t.Errorf("completion tokens %d, want one per word of %q", resp.Usage.CompletionTokens, got.Message.Content)
	}
}

func TestChatUsageSplits(t *testing.T) {
	_, client := startOpenAI(t)
	long := strings.Repeat("All work and no play makes a dull gateway. ", 200)
	tests := []struct {
		name          string
		content       string
		effort        shared.ReasoningEffort
		wantCached    bool
		wantReasoning bool
	}{
		{"short prompt", question, "", false, false},
		{"long prompt is partly cached", long, "", true, false},
		{"reasoning effort adds reasoning tokens", question, shared.ReasoningEffortHigh, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chatParams(tt.content)
			p.ReasoningEffort = tt.effort
			resp, err := client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			u := resp.Usage
			checkChatUsage(t, u)
			if cached := u.PromptTokensDetails.CachedTokens; (cached > 0) != tt.wantCached || cached >= u.PromptTokens {
				t.Errorf("cached %d of %d prompt tokens, want cached=%v and below the prompt", cached, u.PromptTokens, tt.wantCached)
			}
			if reasoning := u.CompletionTokensDetails.ReasoningTokens; (reasoning > 0) != tt.wantReasoning {
				t.Errorf("reasoning tokens %d, want reasoning=%v", reasoning, tt.wantReasoning)
			}
		})
	}
}

// chatServers are the servers that speak Chat Completions: OpenAI, and
// Anthropic's OpenAI-compatible layer, whose usage has no breakdowns.
var chatServers = []struct {
	dialect      fakeprovider.Dialect
	usageDetails bool
}{
	{fakeprovider.DialectOpenAI, true},
	{fakeprovider.DialectAnthropic, false},
}

func TestChatStream(t *testing.T) {
	for _, srv := range chatServers {
		_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: srv.dialect, Key: testKey})
		client := sdkclient.OpenAI(base, testKey)
		for _, includeUsage := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/include_usage=%v", srv.dialect, includeUsage), func(t *testing.T) {
				p := chatParams(question)
				if includeUsage {
					p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				}
				acc, chunks := streamChat(t, client, p)
				if got := acc.Choices[0].Message.Content; got != fakeprovider.ReplyText(question) {
					t.Errorf("accumulated %q, want %q", got, fakeprovider.ReplyText(question))
				}
				if acc.Choices[0].FinishReason != "stop" {
					t.Errorf("finish reason %q, want stop", acc.Choices[0].FinishReason)
				}
				if chunks[0].Choices[0].Delta.Role != "assistant" {
					t.Errorf("first delta role %q, want assistant", chunks[0].Choices[0].Delta.Role)
				}
				checkStreamUsage(t, chunks, includeUsage)
				if includeUsage {
					checkStreamedUsage(t, acc, chunks, srv.usageDetails)
				}
			})
		}
	}
}

// streamChat streams a chat completion through the SDK's accumulator.
func streamChat(t *testing.T, client openai.Client, p openai.ChatCompletionNewParams) (openai.ChatCompletionAccumulator, []openai.ChatCompletionChunk) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected chunk %s", chunk.RawJSON())
		}
		chunks = append(chunks, chunk)
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return acc, chunks
}

// checkStreamedUsage checks the usage chunk: counts that add up, one
// completion token per content chunk, and the breakdowns only when the
// server reports them.
func checkStreamedUsage(t *testing.T, acc openai.ChatCompletionAccumulator, chunks []openai.ChatCompletionChunk, details bool) {
	t.Helper()
	checkChatUsage(t, acc.Usage)
	content := 0
	for _, c := range chunks {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			content++
		}
	}
	if int(acc.Usage.CompletionTokens) != content {
		t.Errorf("completion tokens %d, want one per content chunk (%d)", acc.Usage.CompletionTokens, content)
	}
	// The accumulator keeps counts only; the chunk shows what was sent.
	if raw := chunks[len(chunks)-1].Usage.RawJSON(); strings.Contains(raw, "tokens_details") != details {
		t.Errorf("usage %s: want detail objects=%v", raw, details)
	}
}

// checkStreamUsage asserts OpenAI's rule: without include_usage no chunk
// mentions usage; with it every chunk carries "usage":null except a last,
// choice-less one carrying the counts.
func checkStreamUsage(t *testing.T, chunks []openai.ChatCompletionChunk, includeUsage bool) {
	t.Helper()
	for i, c := range chunks {
		raw := c.RawJSON()
		last := i == len(chunks)-1
		switch {
		case !includeUsage && strings.Contains(raw, `"usage"`):
			t.Errorf("chunk %d mentions usage without include_usage: %s", i, raw)
		case includeUsage && !last && !strings.Contains(raw, `"usage":null`):
			t.Errorf("chunk %d lacks usage:null: %s", i, raw)
		case includeUsage && last && (len(c.Choices) != 0 || c.Usage.TotalTokens == 0):
			t.Errorf("last chunk should have no choices and the usage: %s", raw)
		}
	}
}

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: shared.FunctionParameters{
			"type": "object",
			"properties": map[string]any{
				"city": map[string]any{"type": "string"},
				"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
				"days": map[string]any{"type": "integer"},
			},
			"required": []string{"city", "unit", "days"},
		},
	})
}

func TestChatToolCallStream(t *testing.T) {
	_, client := startOpenAI(t)
	p := chatParams(question)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	var finished bool
	fragments := 0
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if _, ok := acc.JustFinishedToolCall(); ok {
			finished = true
		}
		if len(chunk.Choices) == 0 || len(chunk.Choices[0].Delta.ToolCalls) == 0 {
			continue
		}
		tc := chunk.Choices[0].Delta.ToolCalls[0]
		if fragments == 0 && (tc.ID == "" || tc.Function.Name == "" || tc.Function.Arguments != "") {
			t.Errorf("first fragment %s: want id, name and empty arguments", chunk.RawJSON())
		}
		if fragments > 0 && (tc.ID != "" || tc.Function.Name != "" || tc.Index != 0) {
			t.Errorf("later fragment %s: want only index 0 and an argument piece", chunk.RawJSON())
		}
		fragments++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if !finished || fragments < 3 {
		t.Errorf("tool call finished=%v in %d fragments: want a finished call streamed in several", finished, fragments)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 1 || !strings.HasPrefix(calls[0].ID, "call_") || calls[0].Function.Name != "get_weather" {
		t.Fatalf("tool calls %+v: want one call_ get_weather call", calls)
	}
	var args struct {
		City string `json:"city"`
		Unit string `json:"unit"`
		Days int    `json:"days"`
	}
	if err := json.Unmarshal([]byte(calls[0].Function.Arguments), &args); err != nil || args.City == "" || args.Unit != "celsius" || args.Days == 0 {
		t.Errorf("arguments %q (%v): want every property filled, enum from its values", calls[0].Function.Arguments, err)
	}
	if acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish reason %q, want tool_calls", acc.Choices[0].FinishReason)
	}
}

func TestChatToolChoice(t *testing.T) {
	_, client := startOpenAI(t)
	tests := []struct {
		name       string
		choice     openai.ChatCompletionToolChoiceOptionUnionParam
		wantCall   bool
		wantFinish string
	}{
		{"auto", openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}, true, "tool_calls"},
		{"required", openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}, true, "tool_calls"},
		{"named finishes with stop", openai.ToolChoiceOptionFunctionToolChoice(
			openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}), true, "stop"},
		{"none answers in text", openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}, false, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chatParams(question)
			p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
			p.ToolChoice = tt.choice
			resp, err := client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			msg := resp.Choices[0].Message
			if gotCall := len(msg.ToolCalls) == 1; gotCall != tt.wantCall {
				t.Errorf("tool calls %+v, want a call=%v", msg.ToolCalls, tt.wantCall)
			}
			if tt.wantCall && (msg.Content != "" || !msg.JSON.Content.Valid() && msg.JSON.Content.Raw() != "null") {
				t.Errorf("content %q (raw %q): want null beside a tool call", msg.Content, msg.JSON.Content.Raw())
			}
			if resp.Choices[0].FinishReason != tt.wantFinish {
				t.Errorf("finish reason %q, want %q", resp.Choices[0].FinishReason, tt.wantFinish)
			}
		})
	}
}

func TestChatChoicesAndLimits(t *testing.T) {
	_, client := startOpenAI(t)
	reply := fakeprovider.ReplyText(question)
	tests := []struct {
		name       string
		edit       func(*openai.ChatCompletionNewParams)
		wantN      int
		wantText   string
		wantFinish string
	}{
		{"n=3", func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(3) }, 3, reply, "stop"},
		{"max tokens cut", func(p *openai.ChatCompletionNewParams) { p.MaxCompletionTokens = openai.Int(3) },
			1, strings.Join(strings.Fields(reply)[:3], " "), "length"},
		{"stop sequence", func(p *openai.ChatCompletionNewParams) {
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"Paris"}}
		}, 1, reply[:strings.Index(reply, "Paris")], "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chatParams(question)
			tt.edit(&p)
			resp, err := client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			if len(resp.Choices) != tt.wantN {
				t.Fatalf("got %d choices, want %d", len(resp.Choices), tt.wantN)
			}
			for i, c := range resp.Choices {
				if int(c.Index) != i || c.Message.Content != tt.wantText || c.FinishReason != tt.wantFinish {
					t.Errorf("choice %d: index %d, %q, %q; want %q, %q", i, c.Index, c.Message.Content, c.FinishReason, tt.wantText, tt.wantFinish)
				}
			}
		})
	}
}

func TestChatStreamManyChoices(t *testing.T) {
	_, client := startOpenAI(t)
	p := chatParams(question)
	p.N = openai.Int(2)
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(acc.Choices) != 2 {
		t.Fatalf("accumulated %d choices, want 2", len(acc.Choices))
	}
	for i, c := range acc.Choices {
		if c.Message.Content != fakeprovider.ReplyText(question) {
			t.Errorf("choice %d: %q", i, c.Message.Content)
		}
	}
}

func TestChatRequestErrors(t *testing.T) {
	_, client := startOpenAI(t)
	tests := []struct {
		name      string
		edit      func(*openai.ChatCompletionNewParams)
		wantCode  int
		wantParam string
		wantType  string
	}{
		{"stream_options without stream", func(p *openai.ChatCompletionNewParams) {
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		}, 400, "stream_options", "invalid_request_error"},
		{"n out of range", func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(0) }, 400, "n", "invalid_request_error"},
		{"named tool missing", func(p *openai.ChatCompletionNewParams) {
			p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
			p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "nope"})
		}, 400, "tool_choice", "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chatParams(question)
			tt.edit(&p)
			_, err := client.Chat.Completions.New(context.Background(), p)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("got %v, want *openai.Error", err)
			}
			if apiErr.StatusCode != tt.wantCode || apiErr.Param != tt.wantParam || apiErr.Type != tt.wantType || apiErr.Message == "" {
				t.Errorf("error %d param %q type %q message %q; want %d %q %q", apiErr.StatusCode, apiErr.Param, apiErr.Type,
					apiErr.Message, tt.wantCode, tt.wantParam, tt.wantType)
			}
		})
	}
}
