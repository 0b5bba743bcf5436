package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// The gateway meters every passthrough answer. A chat stream whose client
// did not ask for usage is asked on its behalf, and the usage-only chunk
// that brings is taken out again: the client sees what it would have seen
// from the provider itself, while the log line and
// gen_ai_client_token_usage_total carry the provider's figures.

// TestChatStreamUsageNotAsked: a client that did not ask for usage gets the
// provider's own chunks and no usage-only chunk; the upstream was asked for
// usage, and the request's log line and token counters carry it.
func TestChatStreamUsageNotAsked(t *testing.T) {
	for _, split := range []bool{false, true} {
		name := "plain"
		if split {
			name = "split"
		}
		t.Run(name, func(t *testing.T) {
			e := start(t)
			e.openai.SetUsage(fakeprovider.Usage{Split: split})
			p := streamedChatParams()
			got := readChatStream(t, e.openaiClient(keyDefault), p)
			if got.err != nil {
				t.Fatal(got.err)
			}
			upstream := lastCall(t, e.openai)
			if !strings.Contains(string(upstream.Body), `"stream_options":{"include_usage":true}`) {
				t.Errorf("the upstream was not asked for usage: %s", upstream.Body)
			}
			plain := readChatStream(t, e.directOpenAI(), p)
			asked := readChatStream(t, e.directOpenAI(), withUsage(p))
			if plain.err != nil || asked.err != nil || asked.usageOnly != 1 {
				t.Fatalf("direct streams: %v, %v, %d usage chunks", plain.err, asked.err, asked.usageOnly)
			}
			if got.usageOnly != 0 || got.acc.Usage.TotalTokens != 0 {
				t.Errorf("the client got %d usage-only chunks, usage %s", got.usageOnly, got.acc.Usage.RawJSON())
			}
			// What the SDK makes of the chunks is the provider's; the
			// "usage":null each carries is the one difference, and
			// TestChatStreamUsageNotAskedBytes holds it to the bytes.
			wantSameChunks(t, got.nullUsage, plain.chunks)

			u := asked.acc.Usage
			wantUsageLogged(t, e.requestLine(got.header.Get("Pistra-Request-Id")), u.PromptTokens, u.CompletionTokens)
			want := map[string]float64{"input": float64(u.PromptTokens), "output": float64(u.CompletionTokens)}
			if split {
				want["cached_input"] = float64(u.PromptTokensDetails.CachedTokens)
				want["reasoning"] = float64(u.CompletionTokensDetails.ReasoningTokens)
				if want["cached_input"] == 0 || want["reasoning"] == 0 {
					t.Fatalf("split usage %s shows no cache or reasoning", u.RawJSON())
				}
			}
			e.wantTokens(t, "up-openai", "gpt-4o-mini", want)
		})
	}
}

// TestChatStreamUsageAsked: a client that asked gets its usage chunk, the
// same chunks as from the provider, and its body goes up as it sent it.
func TestChatStreamUsageAsked(t *testing.T) {
	e := start(t)
	e.openai.SetUsage(fakeprovider.Usage{Split: true})
	p := withUsage(streamedChatParams())
	got := readChatStream(t, e.openaiClient(keyDefault), p)
	if got.err != nil {
		t.Fatal(got.err)
	}
	if n := strings.Count(string(lastCall(t, e.openai).Body), "include_usage"); n != 1 {
		t.Errorf("upstream body names include_usage %d times: %s", n, lastCall(t, e.openai).Body)
	}
	want := readChatStream(t, e.directOpenAI(), p)
	if want.err != nil {
		t.Fatal(want.err)
	}
	wantSameChunks(t, got.chunks, want.chunks)
	u := got.acc.Usage
	if got.usageOnly != 1 || u.PromptTokens == 0 || u.RawJSON() != want.acc.Usage.RawJSON() {
		t.Errorf("%d usage chunks, usage %s, want one with %s", got.usageOnly, u.RawJSON(), want.acc.Usage.RawJSON())
	}
	wantUsageLogged(t, e.requestLine(got.header.Get("Pistra-Request-Id")), u.PromptTokens, u.CompletionTokens)
	e.wantTokens(t, "up-openai", "gpt-4o-mini", map[string]float64{
		"input": float64(u.PromptTokens), "output": float64(u.CompletionTokens),
		"cached_input": float64(u.PromptTokensDetails.CachedTokens), "reasoning": float64(u.CompletionTokensDetails.ReasoningTokens),
	})
}

// TestResponsesStreamUsage: a Responses stream reports usage in its
// terminal event unasked; the body goes up untouched.
func TestResponsesStreamUsage(t *testing.T) {
	e := start(t)
	e.openai.SetUsage(fakeprovider.Usage{Split: true})
	params := responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
	read := func(client openai.Client) (*responses.Response, http.Header) {
		t.Helper()
		var resp *http.Response
		stream := client.Responses.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
		var final *responses.Response
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "response.completed" {
				r := ev.AsResponseCompleted().Response
				final = &r
			}
		}
		if stream.Err() != nil || final == nil {
			t.Fatalf("stream: %v, completed %v", stream.Err(), final != nil)
		}
		return final, resp.Header
	}
	got, h := read(e.openaiClient(keyDefault))
	if body := string(lastCall(t, e.openai).Body); strings.Contains(body, "stream_options") {
		t.Errorf("a Responses body was edited: %s", body)
	}
	want, _ := read(e.directOpenAI())
	u := got.Usage
	if u.RawJSON() != want.Usage.RawJSON() || u.InputTokensDetails.CachedTokens == 0 || u.OutputTokensDetails.ReasoningTokens == 0 {
		t.Errorf("usage %s, want the provider's split %s", u.RawJSON(), want.Usage.RawJSON())
	}
	wantUsageLogged(t, e.requestLine(h.Get("Pistra-Request-Id")), u.InputTokens, u.OutputTokens)
	e.wantTokens(t, "up-openai", "gpt-4o-mini", map[string]float64{
		"input": float64(u.InputTokens), "output": float64(u.OutputTokens),
		"cached_input": float64(u.InputTokensDetails.CachedTokens), "reasoning": float64(u.OutputTokensDetails.ReasoningTokens),
	})
}

// TestMessagesStreamUsage: Anthropic's counts are cumulative, so the
// output is message_delta's, not added to message_start's placeholder;
// cache reads and writes are added into the input, and counted apart as
// well, with the thinking as reasoning.
func TestMessagesStreamUsage(t *testing.T) {
	e := start(t)
	e.anthropic.SetUsage(fakeprovider.Usage{Split: true})
	p := messageParams("claude-haiku-4-5")
	p.MaxTokens = 2048
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	got := readMessageStream(e.anthropicClient(keyDefault), p)
	if got.err != nil {
		t.Fatal(got.err)
	}
	want := readMessageStream(e.directAnthropic(), p)
	if want.err != nil {
		t.Fatal(want.err)
	}
	d := got.delta
	if d.RawJSON() != want.delta.RawJSON() || got.start.RawJSON() != want.start.RawJSON() {
		t.Errorf("usage start %s delta %s, want the provider's %s %s", got.start.RawJSON(), d.RawJSON(), want.start.RawJSON(), want.delta.RawJSON())
	}
	if d.CacheReadInputTokens == 0 || d.CacheCreationInputTokens == 0 || d.OutputTokensDetails.ThinkingTokens == 0 || got.start.OutputTokens != 1 {
		t.Fatalf("the fake's split usage is not what this test reads: start %s delta %s", got.start.RawJSON(), d.RawJSON())
	}
	input := d.InputTokens + d.CacheReadInputTokens + d.CacheCreationInputTokens
	wantUsageLogged(t, e.requestLine(got.resp.Header.Get("Pistra-Request-Id")), input, d.OutputTokens)
	e.wantTokens(t, "up-anthropic", "claude-haiku-4-5", map[string]float64{
		"input": float64(input), "output": float64(d.OutputTokens),
		"cached_input": float64(d.CacheReadInputTokens), "cache_creation_input": float64(d.CacheCreationInputTokens),
		"reasoning": float64(d.OutputTokensDetails.ThinkingTokens),
	})
}

// TestChatStreamUsageNotAskedBytes: OpenAI sends no usage member at all in
// a stream that did not ask for usage (docs/wire.md#chat-completions-streams); asked on the client's
// behalf, every chunk carries "usage":null, which the gateway removes, so
// the client gets each chunk as the provider would have sent it unasked.
func TestChatStreamUsageNotAskedBytes(t *testing.T) {
	e := start(t)
	p := streamedChatParams()
	got := readChatStream(t, e.openaiClient(keyDefault), p)
	want := readChatStream(t, e.directOpenAI(), p)
	if got.err != nil || want.err != nil {
		t.Fatal(got.err, want.err)
	}
	wantSameChunks(t, got.chunks, want.chunks)
}

// TestChatStreamUsageOtherShapes: servers that put the usage on content
// chunks (every chunk, as Gemini's compatible endpoint does, or the last
// choice's) send no usage-only chunk, so the client's chunks are all
// theirs, usage included, and the meter takes the last figure, never the
// sum.
func TestChatStreamUsageOtherShapes(t *testing.T) {
	for _, mode := range []string{"every-chunk", "last-choice"} {
		t.Run(mode, func(t *testing.T) {
			e := start(t)
			u, err := fakeprovider.ParseUsage(mode + ",split")
			if err != nil {
				t.Fatal(err)
			}
			e.openai.SetUsage(u)
			p := streamedChatParams()
			got := readChatStream(t, e.openaiClient(keyDefault), p)
			want := readChatStream(t, e.directOpenAI(), p)
			if got.err != nil || want.err != nil {
				t.Fatal(got.err, want.err)
			}
			wantSameChunks(t, got.nullUsage, want.chunks)
			final := want.lastUsage
			if got.lastUsage.RawJSON() != final.RawJSON() || final.PromptTokens == 0 || got.usageOnly != 0 {
				t.Errorf("the client's last usage %s, want the provider's %s", got.lastUsage.RawJSON(), final.RawJSON())
			}
			wantUsageLogged(t, e.requestLine(got.header.Get("Pistra-Request-Id")), final.PromptTokens, final.CompletionTokens)
			e.wantTokens(t, "up-openai", "gpt-4o-mini", map[string]float64{
				"input": float64(final.PromptTokens), "output": float64(final.CompletionTokens),
				"cached_input": float64(final.PromptTokensDetails.CachedTokens), "reasoning": float64(final.CompletionTokensDetails.ReasoningTokens),
			})
		})
	}
}

// TestCompletionsStreamUsageNotAsked: legacy completions streams are asked
// for usage like chat streams, and the usage-only chunk is removed alike.
func TestCompletionsStreamUsageNotAsked(t *testing.T) {
	e := start(t)
	params := openai.CompletionNewParams{Model: "gpt-3.5-turbo-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}}
	read := func(client openai.Client, p openai.CompletionNewParams) (chunks []string, usage openai.CompletionUsage, h http.Header) {
		t.Helper()
		var resp *http.Response
		stream := client.Completions.NewStreaming(context.Background(), p, option.WithResponseInto(&resp))
		for stream.Next() {
			c := stream.Current()
			if len(c.Choices) == 0 {
				usage = c.Usage
			}
			chunks = append(chunks, comparableChunk(t, c.RawJSON(), true))
		}
		if stream.Err() != nil {
			t.Fatal(stream.Err())
		}
		return chunks, usage, resp.Header
	}
	got, none, h := read(e.openaiClient(keyDefault), params)
	if none.TotalTokens != 0 || !strings.Contains(string(lastCall(t, e.openai).Body), `"include_usage":true`) {
		t.Errorf("client got usage %s; upstream asked: %s", none.RawJSON(), lastCall(t, e.openai).Body)
	}
	plain, _, _ := read(e.directOpenAI(), params)
	wantSameChunks(t, got, plain)
	asked := params
	asked.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	_, u, _ := read(e.directOpenAI(), asked)
	if u.PromptTokens == 0 {
		t.Fatalf("the provider reported no usage when asked")
	}
	wantUsageLogged(t, e.requestLine(h.Get("Pistra-Request-Id")), u.PromptTokens, u.CompletionTokens)
	e.wantTokens(t, "up-openai", "gpt-3.5-turbo-instruct", map[string]float64{"input": float64(u.PromptTokens), "output": float64(u.CompletionTokens)})
}

// TestResponsesStreamIncompleteUsage: a Responses stream cut short by
// max_output_tokens ends on response.incomplete, a terminal event with
// the usage: complete as a stream, and metered.
func TestResponsesStreamIncompleteUsage(t *testing.T) {
	e := start(t)
	e.openai.SetUsage(fakeprovider.Usage{Split: true}) // reasoning leaves too little for the reply
	params := responsesParams("gpt-4o-mini")
	params.MaxOutputTokens = openai.Int(16)
	got := readResponsesStream(e.openaiClient(keyDefault), params)
	if got.err != nil || got.types[len(got.types)-1] != "response.incomplete" {
		t.Fatalf("stream %v, events %v: want it to end on response.incomplete", got.err, got.types)
	}
	rec := e.requestLine(got.header.Get("Pistra-Request-Id"))
	if rec["usage_from"] != "passthrough" || rec["output_tokens"] != float64(16) || rec["error"] != nil {
		t.Errorf("log line %v: want the terminal event's usage and no error", rec)
	}
	if n := e.counter("pistra_stream_failures_total", map[string]string{"provider": "up-openai", "reason": "incomplete"}); n != 0 {
		t.Errorf("an incomplete response was counted as a broken stream")
	}
}
