package fakeprovider_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// splitWay is one way to ask for split usage.
type splitWay struct {
	name   string
	usage  fakeprovider.Usage
	header string
}

// splitWays are the server's option and the request header.
var splitWays = []splitWay{
	{"server option", fakeprovider.Usage{Split: true}, ""},
	{"request header", fakeprovider.Usage{}, "split"},
}

func (w splitWay) start(t *testing.T, dialect fakeprovider.Dialect) string {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: dialect, Key: testKey, Usage: w.usage})
	return base
}

// headerOption is the SDK option sending the way's header, if it has one.
func headerOption[O any](w splitWay, withHeader func(key, value string) O) []O {
	if w.header == "" {
		return nil
	}
	return []O{withHeader(fakeprovider.UsageHeader, w.header)}
}

func TestSplitUsageOpenAI(t *testing.T) {
	for _, way := range splitWays {
		t.Run(way.name, func(t *testing.T) {
			client := sdkclient.OpenAI(way.start(t, fakeprovider.DialectOpenAI), testKey, headerOption(way, option.WithHeader)...)

			resp, err := client.Chat.Completions.New(context.Background(), chatParams(question))
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			checkSplitChatUsage(t, resp.Usage, resp.Choices[0].Message.Content)
			p := chatParams(question)
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			acc, _ := streamChat(t, client, p)
			checkSplitChatUsage(t, acc.Usage, acc.Choices[0].Message.Content)
			if !sameChatUsage(acc.Usage, resp.Usage) {
				t.Errorf("streamed usage %+v, not streamed %s", acc.Usage, resp.Usage.RawJSON())
			}

			params := responses.ResponseNewParams{Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(question)}}
			r, err := client.Responses.New(context.Background(), params)
			if err != nil {
				t.Fatalf("responses: %v", err)
			}
			checkSplitResponsesUsage(t, r)
			checkSplitResponsesUsage(t, streamResponse(t, client, params))
		})
	}
}

// checkSplitChatUsage: cached tokens inside the prompt, reasoning tokens
// inside the completion beside one token per word of the content.
func checkSplitChatUsage(t *testing.T, u openai.CompletionUsage, content string) {
	t.Helper()
	checkChatUsage(t, u)
	cached, reasoning := u.PromptTokensDetails.CachedTokens, u.CompletionTokensDetails.ReasoningTokens
	if cached < 1 || cached >= u.PromptTokens || reasoning < 1 || int(u.CompletionTokens-reasoning) != len(strings.Fields(content)) {
		t.Errorf("usage %s for %q: want cached tokens within the prompt, reasoning within the completion", u.RawJSON(), content)
	}
}

func sameChatUsage(a, b openai.CompletionUsage) bool {
	return a.PromptTokens == b.PromptTokens && a.CompletionTokens == b.CompletionTokens && a.TotalTokens == b.TotalTokens &&
		a.PromptTokensDetails.CachedTokens == b.PromptTokensDetails.CachedTokens &&
		a.CompletionTokensDetails.ReasoningTokens == b.CompletionTokensDetails.ReasoningTokens
}

func checkSplitResponsesUsage(t *testing.T, r *responses.Response) {
	t.Helper()
	u := r.Usage
	cached, reasoning := u.InputTokensDetails.CachedTokens, u.OutputTokensDetails.ReasoningTokens
	if cached < 1 || cached >= u.InputTokens || reasoning < 1 || int(u.OutputTokens-reasoning) != len(strings.Fields(r.OutputText())) ||
		u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %s for %q: want cached within input, reasoning within output, totals that add up", u.RawJSON(), r.OutputText())
	}
	if r.Status != "completed" || r.Output[0].Type != "reasoning" {
		t.Errorf("response %s: want a completed answer opening with its reasoning item", r.RawJSON())
	}
}

func TestSplitUsageAnthropic(t *testing.T) {
	for _, way := range splitWays {
		t.Run(way.name, func(t *testing.T) {
			client := sdkclient.Anthropic(way.start(t, fakeprovider.DialectAnthropic), testKey, headerOption(way, aoption.WithHeader)...)
			p := messageParams(question)
			count, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: p.Model, Messages: p.Messages})
			if err != nil {
				t.Fatalf("count tokens: %v", err)
			}
			msg, err := client.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatalf("messages: %v", err)
			}
			checkSplitAnthropicUsage(t, msg.Usage, count.InputTokens)
			start, delta, streamed := streamMessageUsage(t, client, p)
			checkSplitAnthropicUsage(t, streamed.Usage, count.InputTokens)
			// message_start has the final input side, message_delta every count, cumulative.
			if start.InputTokens != msg.Usage.InputTokens || start.CacheReadInputTokens != msg.Usage.CacheReadInputTokens ||
				start.CacheCreationInputTokens != msg.Usage.CacheCreationInputTokens {
				t.Errorf("message_start usage %s, message usage %s", start.RawJSON(), msg.Usage.RawJSON())
			}
			if delta.InputTokens != msg.Usage.InputTokens || delta.CacheReadInputTokens != msg.Usage.CacheReadInputTokens ||
				delta.CacheCreationInputTokens != msg.Usage.CacheCreationInputTokens || delta.OutputTokens != msg.Usage.OutputTokens {
				t.Errorf("message_delta usage %s, message usage %s", delta.RawJSON(), msg.Usage.RawJSON())
			}
		})
	}
}

// checkSplitAnthropicUsage: cache reads and writes beside input_tokens, the
// three adding up to the whole prompt.
func checkSplitAnthropicUsage(t *testing.T, u anthropic.Usage, prompt int64) {
	t.Helper()
	if u.InputTokens < 1 || u.CacheReadInputTokens < 1 || u.CacheCreationInputTokens < 1 ||
		u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens != prompt {
		t.Errorf("usage %s: want input, cache reads and cache writes adding up to the %d prompt tokens", u.RawJSON(), prompt)
	}
}

// streamMessageUsage streams a message and returns the usage of its
// message_start and message_delta events and the accumulated message.
func streamMessageUsage(t *testing.T, client anthropic.Client, p anthropic.MessageNewParams) (anthropic.Usage, anthropic.MessageDeltaUsage, *anthropic.Message) {
	t.Helper()
	stream := client.Messages.NewStreaming(context.Background(), p)
	var msg anthropic.Message
	var start anthropic.Usage
	var delta anthropic.MessageDeltaUsage
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.RawJSON(), err)
		}
		switch ev.Type {
		case "message_start":
			start = ev.Message.Usage
		case "message_delta":
			delta = ev.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return start, delta, &msg
}

// TestUsageModeSelection: the header replaces the server's modes, an empty
// one restores the real APIs' behaviour, and an unknown mode is refused.
func TestUsageModeSelection(t *testing.T) {
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey, Usage: fakeprovider.Usage{Split: true}})
	restored := sdkclient.OpenAI(base, testKey, option.WithHeader(fakeprovider.UsageHeader, ""))
	resp, err := restored.Chat.Completions.New(context.Background(), chatParams(question))
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if resp.Usage.PromptTokensDetails.CachedTokens != 0 || resp.Usage.CompletionTokensDetails.ReasoningTokens != 0 {
		t.Errorf("usage %s: an empty header should turn the server's split off", resp.Usage.RawJSON())
	}
	unknown := sdkclient.OpenAI(base, testKey, option.WithHeader(fakeprovider.UsageHeader, "split,loud"))
	_, err = unknown.Chat.Completions.New(context.Background(), chatParams(question))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "loud") {
		t.Errorf("unknown mode: %v, want a 400 naming it", err)
	}
	s.SetUsage(fakeprovider.Usage{})
	if s.Usage() != (fakeprovider.Usage{}) {
		t.Errorf("usage %v after SetUsage", s.Usage())
	}
}

func TestParseUsage(t *testing.T) {
	for _, tt := range []struct {
		text    string
		want    fakeprovider.Usage
		wantErr bool
	}{
		{"", fakeprovider.Usage{}, false},
		{"split", fakeprovider.Usage{Split: true}, false},
		{" split , every-chunk", fakeprovider.Usage{Split: true, ChatStream: fakeprovider.UsageEveryChunk}, false},
		{"last-choice", fakeprovider.Usage{ChatStream: fakeprovider.UsageWithLastChoice}, false},
		{"every-chunk,last-choice", fakeprovider.Usage{}, true},
		{"cached", fakeprovider.Usage{}, true},
	} {
		got, err := fakeprovider.ParseUsage(tt.text)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseUsage(%q) = %+v, %v; want %+v, error=%v", tt.text, got, err, tt.want, tt.wantErr)
		}
		if again, _ := fakeprovider.ParseUsage(got.String()); again != got {
			t.Errorf("%+v does not survive its text form %q", got, got.String())
		}
	}
}

func TestUsageControlEndpoint(t *testing.T) {
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic})
	origin := strings.TrimSuffix(base, "/v1")
	for _, tt := range []struct {
		body       string
		wantStatus int
		want       fakeprovider.Usage
	}{
		{`{"usage":"split,last-choice"}`, 200, fakeprovider.Usage{Split: true, ChatStream: fakeprovider.UsageWithLastChoice}},
		{`{"usage":"sometimes"}`, 400, fakeprovider.Usage{Split: true, ChatStream: fakeprovider.UsageWithLastChoice}},
		{`{"usage":""}`, 200, fakeprovider.Usage{}},
	} {
		resp, err := http.Post(origin+"/_fake/usage", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.wantStatus || s.Usage() != tt.want {
			t.Errorf("POST %s: status %d, usage %+v; want %d, %+v", tt.body, resp.StatusCode, s.Usage(), tt.wantStatus, tt.want)
		}
	}
}
