package fakeprovider_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

func TestCompletions(t *testing.T) {
	_, client := startOpenAI(t)
	prompts := []string{"Once upon a time", "The quick brown fox jumps over the lazy dog again and again"}
	resp, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  "gpt-3.5-turbo-instruct",
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: prompts},
		N:      openai.Int(2),
	})
	if err != nil {
		t.Fatalf("completions: %v", err)
	}
	if resp.Object != "text_completion" || len(resp.Choices) != 4 {
		t.Fatalf("object %q with %d choices: want text_completion with one per prompt and n", resp.Object, len(resp.Choices))
	}
	for i, c := range resp.Choices {
		// The reply fits the default max_tokens of 16, so none is cut.
		if want := fakeprovider.ReplyText(prompts[i/2]); c.Text != want || c.FinishReason != "stop" {
			t.Errorf("choice %d: %q (%s), want %q (stop)", i, c.Text, c.FinishReason, want)
		}
	}
	if u := resp.Usage; u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.CompletionTokens == 0 {
		t.Errorf("usage %+v does not add up", u)
	}
}

func TestCompletionsStream(t *testing.T) {
	_, client := startOpenAI(t)
	prompt := "The quick brown fox jumps over the lazy dog"
	stream := client.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model:         "gpt-3.5-turbo-instruct",
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens:     openai.Int(4),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	var finish string
	var usage openai.CompletionUsage
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Object != "text_completion" {
			t.Errorf("chunk object %q, want text_completion", chunk.Object)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Text)
			if c.FinishReason != "" {
				finish = string(c.FinishReason)
			}
		}
		if chunk.JSON.Usage.Valid() {
			usage = chunk.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	want := strings.Join(strings.Fields(fakeprovider.ReplyText(prompt))[:4], " ")
	if text.String() != want || finish != "length" || usage.CompletionTokens != 4 {
		t.Errorf("streamed %q (%s, %d tokens), want %q cut at max_tokens 4", text.String(), finish, usage.CompletionTokens, want)
	}
}

func TestEmbeddings(t *testing.T) {
	_, client := startOpenAI(t)
	inputs := []string{"first input", "second input", "first input"}
	get := func(format openai.EmbeddingNewParamsEncodingFormat) *openai.CreateEmbeddingResponse {
		t.Helper()
		resp, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model:          "text-embedding-3-small",
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
			EncodingFormat: format,
			Dimensions:     openai.Int(64),
		})
		if err != nil {
			t.Fatalf("embeddings (%q): %v", format, err)
		}
		return resp
	}
	floats, b64 := get(openai.EmbeddingNewParamsEncodingFormatFloat), get(openai.EmbeddingNewParamsEncodingFormatBase64)
	if !strings.HasPrefix(b64.Data[0].JSON.Embedding.Raw(), `"`) {
		t.Fatalf("base64 format sent %.20s…, want a string", b64.Data[0].JSON.Embedding.Raw())
	}
	for i := range inputs {
		// Both carry float32 values; as decimals they parse to the nearest
		// float64, so compare at float32 precision.
		f, b := asFloat32(floats.Data[i].Embedding), asFloat32(b64.Data[i].Embedding)
		if len(f) != 64 || !slices.Equal(f, b) {
			t.Fatalf("input %d: float and base64 vectors differ (%d vs %d values)", i, len(f), len(b))
		}
		var norm float64
		for _, v := range f {
			norm += float64(v) * float64(v)
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Errorf("input %d: squared norm %f, want a unit vector", i, norm)
		}
	}
	if !slices.Equal(floats.Data[0].Embedding, floats.Data[2].Embedding) || slices.Equal(floats.Data[0].Embedding, floats.Data[1].Embedding) {
		t.Error("want equal inputs to embed equally and different ones differently")
	}
	if u := floats.Usage; u.PromptTokens == 0 || u.TotalTokens != u.PromptTokens {
		t.Errorf("usage %+v: want prompt tokens only", u)
	}
}

func asFloat32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func weatherFunction() responses.ToolUnionParam {
	return responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
		Name: "get_weather",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
		},
	}}
}

func TestResponses(t *testing.T) {
	_, client := startOpenAI(t)
	input := responses.ResponseNewParamsInputUnion{OfString: openai.String(question)}
	tests := []struct {
		name       string
		params     responses.ResponseNewParams
		wantStatus responses.ResponseStatus
		wantText   string
		wantCall   bool
		reasoning  bool
	}{
		{"text", responses.ResponseNewParams{Model: "gpt-4.1-mini", Input: input}, "completed", fakeprovider.ReplyText(question), false, false},
		{"reasoning", responses.ResponseNewParams{Model: "o4-mini", Input: input, Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}},
			"completed", fakeprovider.ReplyText(question), false, true},
		{"reasoning eats the output budget", responses.ResponseNewParams{Model: "o4-mini", Input: input,
			MaxOutputTokens: openai.Int(16), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}}, "incomplete", "", false, true},
		{"function call", responses.ResponseNewParams{Model: "gpt-4.1-mini", Input: input, Tools: []responses.ToolUnionParam{weatherFunction()}},
			"completed", "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Responses.New(context.Background(), tt.params)
			if err != nil {
				t.Fatalf("responses: %v", err)
			}
			checkResponse(t, resp, tt.wantStatus, tt.wantText, tt.wantCall, tt.reasoning)
			streamed := streamResponse(t, client, tt.params)
			checkResponse(t, streamed, tt.wantStatus, tt.wantText, tt.wantCall, tt.reasoning)
		})
	}
}

func checkResponse(t *testing.T, resp *responses.Response, status responses.ResponseStatus, text string, call, reasoning bool) {
	t.Helper()
	if resp.Status != status || resp.OutputText() != text {
		t.Errorf("status %q text %q, want %q %q", resp.Status, resp.OutputText(), status, text)
	}
	if status == "incomplete" && resp.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("incomplete reason %q, want max_output_tokens", resp.IncompleteDetails.Reason)
	}
	var gotCall bool
	for _, item := range resp.Output {
		if item.Type == "function_call" {
			gotCall = item.Name == "get_weather" && strings.HasPrefix(item.CallID, "call_") && strings.Contains(item.Arguments.OfString, `"city"`)
		}
	}
	if gotCall != call {
		t.Errorf("output %s: want a get_weather call=%v", resp.RawJSON(), call)
	}
	u := resp.Usage
	if u.InputTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens || (u.OutputTokensDetails.ReasoningTokens > 0) != reasoning {
		t.Errorf("usage %s: want totals that add up and reasoning=%v", u.RawJSON(), reasoning)
	}
}

// streamResponse streams a response, checks the event order the SDK's
// helpers rely on, and returns the terminal event's response.
func streamResponse(t *testing.T, client openai.Client, params responses.ResponseNewParams) *responses.Response {
	t.Helper()
	stream := client.Responses.NewStreaming(context.Background(), params)
	var events []responses.ResponseStreamEventUnion
	var text, args strings.Builder
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != int64(len(events)) {
			t.Errorf("event %d (%s) has sequence number %d", len(events), ev.Type, ev.SequenceNumber)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.function_call_arguments.done":
			if ev.Arguments != args.String() {
				t.Errorf("argument deltas %q, done says %q", args.String(), ev.Arguments)
			}
		}
		events = append(events, ev)
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(events) < 4 || events[0].Type != "response.created" || events[0].Response.Usage.JSON.TotalTokens.Valid() {
		t.Fatalf("stream of %d events must open with response.created without usage", len(events))
	}
	last := events[len(events)-1]
	if last.Type != "response."+string(last.Response.Status) {
		t.Errorf("terminal event %q for status %q", last.Type, last.Response.Status)
	}
	if text.String() != last.Response.OutputText() {
		t.Errorf("text deltas %q, final text %q", text.String(), last.Response.OutputText())
	}
	return &last.Response
}

func TestResponsesStreamHasNoDone(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI})
	req, _ := http.NewRequest("POST", base+"/responses", strings.NewReader(`{"model":"m","input":"hi","stream":true}`))
	req.Header.Set("Authorization", "Bearer anything")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "[DONE]") || !strings.HasSuffix(string(body), "\n\n") {
		t.Errorf("responses stream must end after its terminal event without [DONE]:\n%s", body)
	}
}

// TestResponsesRefusesIncludeUsage: Responses takes stream_options but not
// chat's include_usage member, and refuses it rather than ignore it.
func TestResponsesRefusesIncludeUsage(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI})
	for body, want := range map[string]int{
		`{"model":"m","input":"hi","stream":true,"stream_options":{"include_usage":true}}`:  400,
		`{"model":"m","input":"hi","stream":true,"stream_options":{"include_usage":false}}`: 400,
		`{"model":"m","input":"hi","stream":true,"stream_options":{}}`:                      200,
	} {
		req, _ := http.NewRequest("POST", base+"/responses", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer anything")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == 400 && !strings.Contains(string(msg), "stream_options.include_usage")) {
			t.Errorf("%s: %d %s, want %d", body, resp.StatusCode, msg, want)
		}
	}
}

func TestOpenAIModels(t *testing.T) {
	_, client := startOpenAI(t)
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy == "" || m.Created == 0 {
			t.Errorf("model %s", m.RawJSON())
		}
	}
	if !slices.Contains(ids, "gpt-4o-mini") {
		t.Errorf("models %v lack gpt-4o-mini", ids)
	}
	if m, err := client.Models.Get(context.Background(), "gpt-4o-mini"); err != nil || m.ID != "gpt-4o-mini" {
		t.Errorf("get gpt-4o-mini: %v %v", m, err)
	}
	_, err = client.Models.Get(context.Background(), "no-such-model")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: %v, want a 404 model_not_found", err)
	}
}

func TestOpenAIAuth(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	client := sdkclient.OpenAI(base, "sk-wrong")
	_, err := client.Chat.Completions.New(context.Background(), chatParams(question))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" || apiErr.Type != "invalid_request_error" {
		t.Fatalf("wrong key: %v, want a 401 invalid_api_key", err)
	}
	if apiErr.Response.Header.Get("x-request-id") == "" {
		t.Error("error response has no x-request-id")
	}
	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no key: status %d, want 401", resp.StatusCode)
	}
}
