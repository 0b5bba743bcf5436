package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// translateFailoverPolicy: "smart" is served natively by up-openai, which
// fails over on 5xx to up-anthropic, a provider that speaks only Anthropic
// and resolves smart to a model of its own.
func translateFailoverPolicy(p policy) testkit.Policy {
	upOpenAI := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
	upOpenAI.Aliases = map[string]string{"smart": "gpt-4o-mini"}
	upOpenAI.Retries = retries(1, "5xx")
	upOpenAI.Failover = failover([]string{"up-anthropic"}, "5xx")
	upAnthropic := anthropicProvider(p.Anthropic, 1024, "claude-haiku-4-5")
	upAnthropic.Headers = nil // no anthropic-version: the translator sends its default
	upAnthropic.Aliases = map[string]string{"smart": "claude-haiku-4-5"}
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"up-openai": upOpenAI, "up-anthropic": upAnthropic},
		Primary:   map[string]string{"smart": "up-openai"},
		Profiles:  map[string]testkit.Profile{"default": {}},
		Keys:      []testkit.Key{clientKey("default", "default", keyDefault)},
	}
}

// TestTranslateFailover: a same-dialect primary failing with 5xx moves to
// a translated candidate, streaming or not; the model that answered is the
// candidate's own resolution of the alias.
func TestTranslateFailover(t *testing.T) {
	e := startWith(t, translateFailoverPolicy)
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})
	client := e.openaiClient(keyDefault)
	for _, stream := range []bool{false, true} {
		var resp *http.Response
		var model, content string
		if stream {
			s := client.Chat.Completions.NewStreaming(context.Background(), chatParams("smart"), option.WithResponseInto(&resp))
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			model, content = acc.Model, acc.Choices[0].Message.Content
		} else {
			got, err := client.Chat.Completions.New(context.Background(), chatParams("smart"), option.WithResponseInto(&resp))
			if err != nil {
				t.Fatal(err)
			}
			model, content = got.Model, got.Choices[0].Message.Content
		}
		if model != "claude-haiku-4-5" || content != fakeprovider.ReplyText(prompt) {
			t.Errorf("stream=%v: %q from %q", stream, content, model)
		}
		wantServedBy(t, resp, "up-anthropic", "openai_anthropic")
	}
	if e.openai.Calls() != 4 || e.anthropic.Calls() != 2 {
		t.Errorf("calls: openai %d anthropic %d, want 4 and 2", e.openai.Calls(), e.anthropic.Calls())
	}
	call := lastCall(t, e.anthropic)
	if call.Model != "claude-haiku-4-5" || !strings.Contains(string(call.Body), `"max_tokens":1024`) ||
		call.Header.Get("X-Api-Key") != secretAnthropic || call.Header.Get("Authorization") != "" || call.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("translated attempt sent %s with version %q", call.Body, call.Header.Get("Anthropic-Version"))
	}
	moves := map[string]string{"from": "up-openai", "to": "up-anthropic", "reason": "5xx"}
	if got := testkit.Counter(t, e.srv.Metrics().Registry(), "pistra_failover_total", moves); got != 2 {
		t.Errorf("failovers %v, want 2", got)
	}
}

// TestTranslateUpstreamErrors: an upstream's error status reaches each SDK
// as its own typed error, with the status it knows (Anthropic's 529 is a
// 503 to OpenAI clients), the upstream's message, and retry hints. The
// Anthropic client's model fails over to a second provider, so what it
// gets is the gateway's account of both, under the last one's status.
func TestTranslateUpstreamErrors(t *testing.T) {
	tests := []struct {
		name       string
		anthropic  bool // the client; the upstream speaks the other dialect
		fault      int
		status     int
		errType    string // OpenAI code / Anthropic type: the upstream's error type
		message    string
		retryAfter bool // the fake sends retry hints with every fault but 529
	}{
		{"429 to OpenAI", false, 429, 429, "rate_limit_error", "injected failure", true},
		{"500 to OpenAI", false, 500, 500, "api_error", "injected failure", true},
		{"529 to OpenAI", false, 529, 503, "overloaded_error", "Overloaded", false},
		{"429 to Anthropic", true, 429, 429, "rate_limit_error", `2. provider "backup-openai"`, true},
		{"500 to Anthropic", true, 500, 500, "api_error", `2. provider "backup-openai"`, true},
		{"503 to Anthropic", true, 503, 503, "api_error", `2. provider "backup-openai"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			faults := fakeprovider.Faults{FailStatus: tt.fault, RetryAfter: 10 * time.Millisecond}
			var resp *http.Response
			if tt.anthropic {
				e.setFaults(e.openai, faults)
				e.setFaults(e.backup, faults) // up-openai fails over to it
				client := e.anthropicClient(keyDefault)
				_, err := client.Messages.New(context.Background(), messageParams("gpt-4o-mini"))
				var apiErr *anthropic.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || string(apiErr.Type()) != tt.errType || !strings.Contains(apiErr.Message, tt.message) {
					t.Fatalf("got %v, want %d %s %q", err, tt.status, tt.errType, tt.message)
				}
				resp = apiErr.Response
			} else {
				e.setFaults(e.anthropic, faults)
				client := e.openaiClient(keyDefault)
				_, err := client.Chat.Completions.New(context.Background(), chatParams("claude-haiku-4-5"))
				apiErr := wantOpenAIError(t, err, tt.status, tt.errType)
				if !strings.Contains(apiErr.Message, tt.message) {
					t.Fatalf("message %q, want %q", apiErr.Message, tt.message)
				}
				resp = apiErr.Response
			}
			if (resp.Header.Get("Retry-After") != "") != tt.retryAfter || resp.Header.Get("Pistra-Provider") == "" && !tt.anthropic {
				t.Errorf("headers %v", resp.Header)
			}
		})
	}
}

// TestTranslatedStreamCut: an upstream stream that breaks after the status
// went out ends the client's stream in the gateway's error, the same code
// and words a passthrough stream broken so ends in (TestStreamBrokenMidway),
// naming the provider, in each dialect; not a clean end.
func TestTranslatedStreamCut(t *testing.T) {
	e := start(t)
	e.setFaults(e.anthropic, fakeprovider.Faults{CutAfter: 3})
	got := readChatStream(t, e.openaiClient(keyDefault), chatParams("claude-haiku-4-5"))
	var se *ssestream.StreamError
	if !errors.As(got.err, &se) || !strings.Contains(se.Message, incompleteCode) ||
		!strings.Contains(se.Message, `the stream from provider \"up-anthropic\" broke`) {
		t.Errorf("the OpenAI client's stream ended with %T %v, want a stream error with %s", got.err, got.err, incompleteCode)
	}
	e.setFaults(e.openai, fakeprovider.Faults{CutAfter: 2})
	as := readMessageStream(e.anthropicClient(keyDefault), messageParams("gpt-4o-mini"))
	var apiErr *anthropic.Error
	if !errors.As(as.err, &apiErr) || string(apiErr.ErrorCode()) != incompleteCode || apiErr.Type() != "api_error" ||
		!strings.Contains(apiErr.Error(), `the stream from provider \"up-openai\" broke`) {
		t.Errorf("the Anthropic client's stream ended with %T %v, want an API error with %s", as.err, as.err, incompleteCode)
	}
}

// TestTranslatedFidelityRefusal: a strict-tools request from an Anthropic
// client, whose model only an OpenAI-only provider serves, is refused under
// the default reject before anything is sent upstream.
func TestTranslatedFidelityRefusal(t *testing.T) {
	e := start(t)
	p := messageParams("gpt-4o-mini")
	p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", Strict: anthropic.Bool(true),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherProperties, Required: []string{"city"}}}}}
	client := e.anthropicClient(keyDefault)
	_, err := client.Messages.New(context.Background(), p)
	wantAnthropicError(t, err, http.StatusBadRequest, "fidelity_loss")
	if e.openai.Calls() != 0 || e.backup.Calls() != 0 {
		t.Errorf("a refused request reached an upstream")
	}
}

// TestPreflightRefusesUntranslatable: a body the translator refuses (a file
// part, which Anthropic's Messages API cannot take) gets the same 400 from
// preflight as from the real request when only a translated candidate
// exists; when a native candidate exists, both pick it.
func TestPreflightRefusesUntranslatable(t *testing.T) {
	e := startWith(t, translateFailoverPolicy)
	fileParams := func(model string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{FileID: openai.String("file-abc123")}),
				openai.TextContentPart("Summarise the file."),
			}),
		}}
	}
	auth := http.Header{"Authorization": {"Bearer " + keyDefault}}
	client := e.openaiClient(keyDefault)

	status, raw := e.preflight(e.baseURL()+"preflight", auth, fileParams("claude-haiku-4-5"))
	_, err := client.Chat.Completions.New(context.Background(), fileParams("claude-haiku-4-5"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "untranslatable_request" {
		t.Fatalf("want untranslatable_request, got %v", err)
	}
	if status != apiErr.StatusCode || !strings.Contains(string(raw), apiErr.RawJSON()) {
		t.Errorf("preflight %d %s\nrequest   %d %s", status, raw, apiErr.StatusCode, apiErr.RawJSON())
	}
	if n := len(e.anthropic.Requests()); n != 0 {
		t.Errorf("the untranslatable body reached the Anthropic upstream %d times", n)
	}

	status, raw = e.preflight(e.baseURL()+"preflight", auth, fileParams("smart"))
	ans := decodeAnswer(t, status, raw)
	var resp *http.Response
	if _, err := client.Chat.Completions.New(context.Background(), fileParams("smart"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if ans.Serve.Provider != "up-openai" || resp.Header.Get("Pistra-Provider") != "up-openai" {
		t.Errorf("preflight serves %q, the request was served by %q", ans.Serve.Provider, resp.Header.Get("Pistra-Provider"))
	}
	// The file part keeps the translated failover candidate out of the
	// attempt order; a plain body has it, naming its claim's source: the
	// translator, not the native channel it rides.
	if n := len(ans.AttemptOrder); n != 1 {
		t.Errorf("attempt order for an untranslatable body: %+v", ans.AttemptOrder)
	}
	status, raw = e.preflight(e.baseURL()+"preflight", auth, chatParams("smart"))
	ans = decodeAnswer(t, status, raw)
	last := ans.AttemptOrder[len(ans.AttemptOrder)-1]
	if last.Tier != "translation" || !strings.Contains(last.VerifiedBy, "translator") {
		t.Errorf("translated candidate %+v", last)
	}
}
