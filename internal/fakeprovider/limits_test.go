package fakeprovider_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// replyWords is the start of the reply to question, as a token limit cuts it.
func replyWords(n int) string {
	return strings.Join(strings.Fields(fakeprovider.ReplyText(question))[:n], " ")
}

// TestResponsesIncomplete: an answer max_output_tokens cuts is incomplete,
// with the reason and the usage, streamed (ending in response.incomplete)
// or not. Reasoning that spends the whole budget leaves no message.
func TestResponsesIncomplete(t *testing.T) {
	_, client := startOpenAI(t)
	tests := []struct {
		name        string
		effort      shared.ReasoningEffort
		wantText    string
		wantMessage bool
	}{
		{"text cut after the reasoning", shared.ReasoningEffortMinimal, replyWords(8), true},
		{"reasoning spends the budget", shared.ReasoningEffortLow, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := responses.ResponseNewParams{Model: "o4-mini", MaxOutputTokens: openai.Int(16),
				Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String(question)},
				Reasoning: shared.ReasoningParam{Effort: tt.effort}}
			resp, err := client.Responses.New(context.Background(), params)
			if err != nil {
				t.Fatalf("responses: %v", err)
			}
			checkIncomplete(t, resp, tt.wantText, tt.wantMessage)
			// streamResponse checks that the terminal event is named for the status.
			checkIncomplete(t, streamResponse(t, client, params), tt.wantText, tt.wantMessage)
		})
	}
}

func checkIncomplete(t *testing.T, resp *responses.Response, text string, message bool) {
	t.Helper()
	if resp.Status != "incomplete" || resp.IncompleteDetails.Reason != "max_output_tokens" || resp.OutputText() != text {
		t.Errorf("status %q reason %q text %q; want incomplete, max_output_tokens, %q", resp.Status, resp.IncompleteDetails.Reason, resp.OutputText(), text)
	}
	u := resp.Usage
	if u.OutputTokens != 16 || u.OutputTokensDetails.ReasoningTokens < 1 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %s: want all 16 output tokens billed, reasoning among them", u.RawJSON())
	}
	var gotMessage bool
	for _, item := range resp.Output {
		if item.Type == "message" {
			gotMessage = true
			if item.Status != "incomplete" {
				t.Errorf("message item status %q, want incomplete", item.Status)
			}
		}
	}
	if gotMessage != message {
		t.Errorf("output %s: want a message item=%v", resp.RawJSON(), message)
	}
}

// TestChatCutByMaxTokens: finish_reason "length", reasoning spent first,
// the completion tokens the limit per choice, streamed or not.
func TestChatCutByMaxTokens(t *testing.T) {
	_, client := startOpenAI(t)
	tests := []struct {
		name          string
		n, limit      int64
		effort        shared.ReasoningEffort
		wantText      string
		wantReasoning int64
	}{
		{"text", 1, 3, "", replyWords(3), 0},
		{"two choices", 2, 3, "", replyWords(3), 0},
		{"reasoning first", 1, 10, shared.ReasoningEffortMinimal, replyWords(2), 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chatParams(question)
			p.N, p.MaxCompletionTokens, p.ReasoningEffort = openai.Int(tt.n), openai.Int(tt.limit), tt.effort
			resp, err := client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			acc, _ := streamChat(t, client, p)
			for _, got := range []openai.ChatCompletion{*resp, acc.ChatCompletion} {
				for i, c := range got.Choices {
					if c.Message.Content != tt.wantText || c.FinishReason != "length" {
						t.Errorf("choice %d: %q finish %q, want %q cut with length", i, c.Message.Content, c.FinishReason, tt.wantText)
					}
				}
				if u := got.Usage; u.CompletionTokens != tt.n*tt.limit || u.CompletionTokensDetails.ReasoningTokens != tt.n*tt.wantReasoning {
					t.Errorf("usage %+v: want %d completion tokens, %d of them reasoning", u, tt.n*tt.limit, tt.n*tt.wantReasoning)
				}
			}
		})
	}
}

// TestMessagesCutByMaxTokens: stop_reason max_tokens and never more output
// than max_tokens, thinking included, streamed or not.
func TestMessagesCutByMaxTokens(t *testing.T) {
	_, client, _ := startAnthropic(t)
	tests := []struct {
		name       string
		maxTokens  int64
		thinking   bool
		wantBlocks []string
		wantText   string
	}{
		{"text", 3, false, []string{"text"}, replyWords(3)},
		{"thinking spends the budget", 5, true, []string{"thinking"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := messageParams(question)
			p.MaxTokens = tt.maxTokens
			if tt.thinking {
				p.Thinking = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
			}
			msg, err := client.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatalf("messages: %v", err)
			}
			_, delta, streamed := streamMessageUsage(t, client, p)
			for _, got := range []*anthropic.Message{msg, streamed} {
				var types []string
				text := ""
				for _, b := range got.Content {
					types = append(types, b.Type)
					text += b.Text
				}
				if got.StopReason != "max_tokens" || strings.Join(types, ",") != strings.Join(tt.wantBlocks, ",") || text != tt.wantText {
					t.Errorf("stop %q blocks %v text %q; want max_tokens, %v, %q", got.StopReason, types, text, tt.wantBlocks, tt.wantText)
				}
				if got.Usage.OutputTokens != tt.maxTokens {
					t.Errorf("output tokens %d, want all %d of max_tokens", got.Usage.OutputTokens, tt.maxTokens)
				}
			}
			if delta.OutputTokens != tt.maxTokens {
				t.Errorf("message_delta usage %s, want output_tokens %d", delta.RawJSON(), tt.maxTokens)
			}
		})
	}
	p := messageParams(question)
	p.MaxTokens = 0
	_, err := client.Messages.New(context.Background(), p)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Errorf("max_tokens 0: %v, want a 400", err)
	}
}
