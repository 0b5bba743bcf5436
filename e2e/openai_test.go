package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/fakeprovider"
)

const prompt = "Say hello to the gateway please"

func chatParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	}
}

func TestOpenAIChat(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	var resp *http.Response
	got, err := client.Chat.Completions.New(context.Background(), chatParams("fast"),
		option.WithResponseInto(&resp), option.WithHeader("OpenAI-Organization", "org-e2e"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
		t.Fatalf("reply %+v", got.Choices)
	}
	if got.Usage.PromptTokens == 0 || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens {
		t.Errorf("usage %+v", got.Usage)
	}
	if resp.Header.Get("Pistra-Provider") != "up-openai" || resp.Header.Get("Pistra-Channel-Origin") != "native" ||
		resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("Pistra-Request-Id") == "" {
		t.Errorf("response headers %v", resp.Header)
	}

	call := lastCall(t, e.openai)
	if call.Path != "/v1/chat/completions" || call.Model != "gpt-4o-mini" {
		t.Errorf("upstream got %s model %q, want the alias resolved to gpt-4o-mini", call.Path, call.Model)
	}
	if call.Header.Get("Authorization") != "Bearer "+secretOpenAI {
		t.Errorf("upstream Authorization is not the provider's credential")
	}
	// The client's organization selects an account of its pistra key, not
	// of the provider's: it stays behind.
	if call.Header.Get("Openai-Organization") != "" || call.Header.Get("X-Request-Id") != resp.Header.Get("Pistra-Request-Id") {
		t.Errorf("forwarded headers %v", call.Header)
	}
	if e.backup.Calls() != 0 || e.anthropic.Calls() != 0 {
		t.Errorf("other upstreams were called")
	}
}

func TestOpenAIChatStream(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	for _, includeUsage := range []bool{false, true} {
		p := chatParams("gpt-4o-mini")
		if includeUsage {
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		}
		stream := client.Chat.Completions.NewStreaming(context.Background(), p)
		var acc openai.ChatCompletionAccumulator
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if chunks < 3 || acc.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
			t.Fatalf("%d chunks, content %q", chunks, acc.Choices[0].Message.Content)
		}
		if got := acc.Usage.TotalTokens > 0; got != includeUsage {
			t.Errorf("include_usage=%v: usage %+v", includeUsage, acc.Usage)
		}
	}
}

func TestOpenAICompletions(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	got, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  "gpt-3.5-turbo-instruct",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Text == "" || got.Usage.PromptTokens == 0 {
		t.Fatalf("completion %+v", got)
	}
	if call := lastCall(t, e.openai); call.Path != "/v1/completions" || call.Model != "gpt-3.5-turbo-instruct" {
		t.Errorf("upstream got %s %q", call.Path, call.Model)
	}
}

// TestOpenAICompletionsStream: the legacy completions stream relays whole,
// with usage only when the client asks for it, as the OpenAI API does.
func TestOpenAICompletionsStream(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	for _, withUsage := range []bool{false, true} {
		params := openai.CompletionNewParams{
			Model:  "gpt-3.5-turbo-instruct",
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		}
		if withUsage {
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		}
		stream := client.Completions.NewStreaming(context.Background(), params)
		var text strings.Builder
		var usage int64
		for stream.Next() {
			c := stream.Current()
			for _, ch := range c.Choices {
				text.WriteString(ch.Text)
			}
			usage += c.Usage.TotalTokens
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if text.Len() == 0 || (usage > 0) != withUsage {
			t.Errorf("include_usage=%v: text %q, usage tokens %d", withUsage, text.String(), usage)
		}
	}
}

// TestOpenAIEmbeddings asks for floats and for the base64 encoding the
// OpenAI SDKs request by default; both must decode to the same vector.
func TestOpenAIEmbeddings(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	vectors := map[string][]float64{}
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		got, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model:          "text-embedding-3-small",
			Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String(prompt)},
			EncodingFormat: format,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 1 || len(got.Data[0].Embedding) == 0 || got.Usage.PromptTokens == 0 {
			t.Fatalf("%s: embeddings %+v", format, got)
		}
		vectors[string(format)] = got.Data[0].Embedding
		if raw := got.Data[0].JSON.Embedding.Raw(); (format == "base64") != strings.HasPrefix(raw, `"`) {
			t.Errorf("%s: wire value starts %.10s", format, raw)
		}
	}
	if !slices.EqualFunc(vectors["float"], vectors["base64"], func(a, b float64) bool { return float32(a) == float32(b) }) {
		t.Errorf("float and base64 embeddings differ")
	}
}

func TestOpenAIResponses(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	params := responses.ResponseNewParams{
		Model: "fast",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
	}
	got, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got.OutputText() != fakeprovider.ReplyText(prompt) || got.Usage.TotalTokens == 0 {
		t.Fatalf("response %q usage %+v", got.OutputText(), got.Usage)
	}

	stream := client.Responses.NewStreaming(context.Background(), params)
	var text strings.Builder
	completed := false
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			completed = ev.Response.Usage.TotalTokens > 0
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != fakeprovider.ReplyText(prompt) || !completed {
		t.Fatalf("streamed %q, completed with usage %v", text.String(), completed)
	}
	if call := lastCall(t, e.openai); call.Path != "/v1/responses" || call.Model != "gpt-4o-mini" {
		t.Errorf("upstream got %s %q", call.Path, call.Model)
	}
}

func TestOpenAIModels(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	ids := func(key string) []string {
		client := e.openaiClient(key)
		page, err := client.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range page.Data {
			out = append(out, m.ID)
		}
		return out
	}
	all := ids(keyDefault)
	for _, want := range []string{"fast", "flaky", "gpt-4o-mini", "text-embedding-3-small", "backup-mini"} {
		if !slices.Contains(all, want) {
			t.Errorf("default key's list %v lacks %q", all, want)
		}
	}
	limited := ids(keyLimited)
	if !slices.Contains(limited, "gpt-4o-mini") || slices.Contains(limited, "gpt-3.5-turbo-instruct") || slices.Contains(limited, "flaky") {
		t.Errorf("limited key lists %v", limited)
	}
	client := e.openaiClient(keyDefault)
	m, err := client.Models.Get(ctx, "fast")
	if err != nil || m.ID != "fast" {
		t.Fatalf("get fast: %+v %v", m, err)
	}
	limitedClient := e.openaiClient(keyLimited)
	_, err = limitedClient.Models.Get(ctx, "flaky")
	wantOpenAIError(t, err, http.StatusNotFound, "model_not_found")
}
