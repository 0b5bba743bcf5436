package fakeprovider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// serveWithoutUsage serves a fake of dialect d behind WithoutUsage on a
// loopback port and returns it with its base URL.
func serveWithoutUsage(t *testing.T, d fakeprovider.Dialect) (*fakeprovider.Server, string) {
	t.Helper()
	s, err := fakeprovider.New(fakeprovider.Options{Dialect: d, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(fakeprovider.WithoutUsage(s))
	t.Cleanup(hs.Close)
	return s, hs.URL + "/v1"
}

func TestWithoutUsageChat(t *testing.T) {
	_, base := serveWithoutUsage(t, fakeprovider.DialectOpenAI)
	client := sdkclient.OpenAI(base, testKey)
	var raw *http.Response
	got, err := client.Chat.Completions.New(context.Background(), chatParams(question), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != fakeprovider.ReplyText(question) {
		t.Errorf("reply %q, want the fake's", got.Choices[0].Message.Content)
	}
	if got.JSON.Usage.Valid() || strings.Contains(got.RawJSON(), "tokens") {
		t.Errorf("the answer still reports usage: %s", got.RawJSON())
	}
	if raw.ContentLength != int64(len(got.RawJSON())) {
		t.Errorf("content-length %d for a body of %d bytes", raw.ContentLength, len(got.RawJSON()))
	}
}

func TestWithoutUsageChatStream(t *testing.T) {
	for _, mode := range []string{"", "every-chunk", "last-choice"} {
		t.Run("usage="+mode, func(t *testing.T) {
			_, base := serveWithoutUsage(t, fakeprovider.DialectOpenAI)
			client := sdkclient.OpenAI(base, testKey, option.WithHeader(fakeprovider.UsageHeader, mode))
			p := chatParams(question)
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := client.Chat.Completions.NewStreaming(context.Background(), p)
			var acc openai.ChatCompletionAccumulator
			chunks := 0
			for stream.Next() {
				c := stream.Current()
				chunks++
				if c.JSON.Usage.Valid() || len(c.Choices) == 0 {
					t.Errorf("chunk %d reports usage or has no choice: %s", chunks, c.RawJSON())
				}
				acc.AddChunk(c)
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if acc.Choices[0].Message.Content != fakeprovider.ReplyText(question) || acc.Choices[0].FinishReason != "stop" {
				t.Errorf("stream made %q (%s), want the fake's reply, stopped", acc.Choices[0].Message.Content, acc.Choices[0].FinishReason)
			}
		})
	}
}

func TestWithoutUsageResponses(t *testing.T) {
	_, base := serveWithoutUsage(t, fakeprovider.DialectOpenAI)
	client := sdkclient.OpenAI(base, testKey)
	params := responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(question)}}
	got, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got.OutputText() != fakeprovider.ReplyText(question) || strings.Contains(got.RawJSON(), "input_tokens") {
		t.Errorf("reply %q, body %s: want the fake's reply and no usage", got.OutputText(), got.RawJSON())
	}
	stream := client.Responses.NewStreaming(context.Background(), params)
	events := 0
	for stream.Next() {
		events++
		if raw := stream.Current().RawJSON(); strings.Contains(raw, "input_tokens") {
			t.Errorf("event %d reports usage: %s", events, raw)
		}
	}
	if err := stream.Err(); err != nil || events == 0 {
		t.Fatalf("stream of %d events: %v", events, err)
	}
}

func TestWithoutUsageMessages(t *testing.T) {
	_, base := serveWithoutUsage(t, fakeprovider.DialectAnthropic)
	client := sdkclient.Anthropic(base, testKey)
	params := anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))}}
	got, err := client.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content[0].Text != fakeprovider.ReplyText(question) || strings.Contains(got.RawJSON(), "input_tokens") {
		t.Errorf("reply %q, body %s: want the fake's reply and no usage", got.Content[0].Text, got.RawJSON())
	}
	stream := client.Messages.NewStreaming(context.Background(), params)
	var msg anthropic.Message
	events := 0
	for stream.Next() {
		ev := stream.Current()
		events++
		if strings.Contains(ev.RawJSON(), "output_tokens") {
			t.Errorf("event %s reports usage: %s", ev.Type, ev.RawJSON())
		}
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != fakeprovider.ReplyText(question) || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("stream made %q (%s) in %d events", msg.Content[0].Text, msg.StopReason, events)
	}
}

// TestWithoutUsageKeepsErrors: an injected failure keeps its status and
// body; nothing of it is usage.
func TestWithoutUsageKeepsErrors(t *testing.T) {
	s, base := serveWithoutUsage(t, fakeprovider.DialectOpenAI)
	if err := s.SetFaults(fakeprovider.Faults{FailStatus: http.StatusServiceUnavailable}); err != nil {
		t.Fatal(err)
	}
	client := sdkclient.OpenAI(base, testKey)
	_, err := client.Chat.Completions.New(context.Background(), chatParams(question))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable || apiErr.Message == "" {
		t.Fatalf("want the injected 503 with its message, got %v", err)
	}
	if s.Calls() != 1 {
		t.Errorf("the fake behind the wrapper saw %d calls, want 1", s.Calls())
	}
}
