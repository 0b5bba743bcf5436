package fakeprovider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// TestChatStreamUsageEveryChunk: as Gemini's OpenAI-compatible endpoint
// does, every chunk carries the running usage, asked for or not, and the
// last the whole request's; no usage-only chunk is added.
func TestChatStreamUsageEveryChunk(t *testing.T) {
	forEachStreamShape(t, "every-chunk,split", func(t *testing.T, want openai.CompletionUsage, chunks []openai.ChatCompletionChunk) {
		var prev int64
		for i, c := range chunks {
			u := c.Usage
			switch {
			case len(c.Choices) == 0:
				t.Errorf("chunk %d has no choices: %s", i, c.RawJSON())
			case !strings.Contains(c.RawJSON(), `"usage":{`):
				t.Errorf("chunk %d carries no usage: %s", i, c.RawJSON())
			case u.PromptTokens != want.PromptTokens || u.PromptTokensDetails.CachedTokens != want.PromptTokensDetails.CachedTokens ||
				u.CompletionTokensDetails.ReasoningTokens != want.CompletionTokensDetails.ReasoningTokens:
				t.Errorf("chunk %d usage %s: the prompt side and the reasoning are known from the start (want %s)", i, u.RawJSON(), want.RawJSON())
			case u.CompletionTokens < prev || u.CompletionTokens < u.CompletionTokensDetails.ReasoningTokens ||
				u.TotalTokens != u.PromptTokens+u.CompletionTokens:
				t.Errorf("chunk %d usage %s: want a running count that only grows (was %d)", i, u.RawJSON(), prev)
			}
			prev = u.CompletionTokens
		}
		if first := chunks[0].Usage; first.CompletionTokens != first.CompletionTokensDetails.ReasoningTokens {
			t.Errorf("first chunk usage %s: nothing visible sent yet", first.RawJSON())
		}
		if last := chunks[len(chunks)-1].Usage; !sameChatUsage(last, want) {
			t.Errorf("last chunk usage %s, want the final %s", last.RawJSON(), want.RawJSON())
		}
	})
}

// TestChatStreamUsageWithLastChoice: the final usage rides the chunk that
// finishes the last choice, asked for or not; no usage-only chunk follows.
func TestChatStreamUsageWithLastChoice(t *testing.T) {
	forEachStreamShape(t, "last-choice", func(t *testing.T, want openai.CompletionUsage, chunks []openai.ChatCompletionChunk) {
		last := chunks[len(chunks)-1]
		if len(last.Choices) != 1 || last.Choices[0].FinishReason != "stop" || !sameChatUsage(last.Usage, want) {
			t.Errorf("last chunk %s: want the last choice's finish with the final usage %s", last.RawJSON(), want.RawJSON())
		}
		for i, c := range chunks[:len(chunks)-1] {
			if strings.Contains(c.RawJSON(), `"usage":{`) || len(c.Choices) == 0 {
				t.Errorf("chunk %d %s: only the last chunk carries usage, and every one has choices", i, c.RawJSON())
			}
		}
	})
}

// forEachStreamShape streams a chat completion in the usage mode for one
// and two choices, with include_usage and without, and hands check the
// non-streamed usage and the chunks.
func forEachStreamShape(t *testing.T, mode string, check func(*testing.T, openai.CompletionUsage, []openai.ChatCompletionChunk)) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	client := sdkclient.OpenAI(base, testKey, option.WithHeader(fakeprovider.UsageHeader, mode))
	for _, n := range []int64{1, 2} {
		for _, includeUsage := range []bool{false, true} {
			t.Run(fmt.Sprintf("n=%d/include_usage=%v", n, includeUsage), func(t *testing.T) {
				p := chatParams(question)
				p.N = openai.Int(n)
				resp, err := client.Chat.Completions.New(context.Background(), p)
				if err != nil {
					t.Fatalf("chat completion: %v", err)
				}
				if includeUsage {
					p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				}
				acc, chunks := streamChat(t, client, p)
				for i, c := range acc.Choices {
					if c.Message.Content != fakeprovider.ReplyText(question) {
						t.Errorf("choice %d streamed %q", i, c.Message.Content)
					}
				}
				check(t, resp.Usage, chunks)
			})
		}
	}
}
