package fakeprovider_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// Anthropic's OpenAI-compatible layer, spoken by the Anthropic-dialect fake
// on /v1/chat/completions, exercised with the OpenAI SDK.

// startCompat serves a fake Anthropic API that expects testKey and returns
// an OpenAI client pointed at it, as Anthropic's documentation sets one up.
func startCompat(t *testing.T, opts ...option.RequestOption) (*fakeprovider.Server, openai.Client) {
	t.Helper()
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey})
	return s, sdkclient.OpenAI(base, testKey, opts...)
}

func compatParams(content string) openai.ChatCompletionNewParams {
	p := chatParams(content)
	p.Model = "claude-haiku-4-5"
	return p
}

// checkNoUsageDetails wants usage without the breakdowns the compatible
// layer does not report.
func checkNoUsageDetails(t *testing.T, u openai.CompletionUsage) {
	t.Helper()
	checkChatUsage(t, u)
	if raw := u.RawJSON(); strings.Contains(raw, "tokens_details") {
		t.Errorf("usage %s: want no detail objects", raw)
	}
}

// TestCompatChat: the OpenAI SDK, with its Bearer key, as Anthropic's
// documentation sets it up. (x-api-key is refused there: see
// TestAuthSchemePerEndpoint.)
func TestCompatChat(t *testing.T) {
	s, client := startCompat(t)
	resp, err := client.Chat.Completions.New(context.Background(), compatParams(question))
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Object != "chat.completion" || resp.Model != "claude-haiku-4-5" {
		t.Errorf("id %q object %q model %q: want a chat.completion of claude-haiku-4-5", resp.ID, resp.Object, resp.Model)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != fakeprovider.ReplyText(question) || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("choices %+v: want the one reply, finished with stop", resp.Choices)
	}
	checkNoUsageDetails(t, resp.Usage)
	calls := s.Requests()
	if len(calls) != 1 || calls[0].Method != http.MethodPost || calls[0].Path != "/v1/chat/completions" ||
		calls[0].Model != "claude-haiku-4-5" || !strings.Contains(string(calls[0].Body), question) {
		t.Errorf("recorded %+v: want the one chat completion", calls)
	}
	if s.Calls() != 1 {
		t.Errorf("calls %d, want 1", s.Calls())
	}
}

// TestCompatUsageHasNoDetails: a prompt OpenAI would partly cache and a
// reasoning effort OpenAI would bill get neither here; the usage is plain
// counts.
func TestCompatUsageHasNoDetails(t *testing.T) {
	_, client := startCompat(t)
	p := compatParams(strings.Repeat("All work and no play makes a dull gateway. ", 200))
	p.ReasoningEffort = shared.ReasoningEffortHigh
	resp, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	checkNoUsageDetails(t, resp.Usage)
	if words := len(strings.Fields(resp.Choices[0].Message.Content)); int(resp.Usage.CompletionTokens) != words {
		t.Errorf("completion tokens %d, want one per word (%d): reasoning_effort is ignored", resp.Usage.CompletionTokens, words)
	}
	if resp.Usage.PromptTokens < 1024 {
		t.Errorf("prompt tokens %d: want the long prompt counted", resp.Usage.PromptTokens)
	}
}

// TestCompatRefusesManyChoices: n must be exactly 1, streamed or not.
func TestCompatRefusesManyChoices(t *testing.T) {
	s, client := startCompat(t)
	for _, n := range []int64{1, 2} {
		p := compatParams(question)
		p.N = openai.Int(n)
		_, err := client.Chat.Completions.New(context.Background(), p)
		stream := client.Chat.Completions.NewStreaming(context.Background(), p)
		for stream.Next() {
		}
		for _, err := range []error{err, stream.Err()} {
			var apiErr *openai.Error
			switch {
			case n == 1 && err != nil:
				t.Errorf("n=1: %v", err)
			case n == 1:
			case !errors.As(err, &apiErr):
				t.Errorf("n=%d: got %v, want *openai.Error", n, err)
			case apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "n" || apiErr.Type != "invalid_request_error":
				t.Errorf("n=%d: %d param %q type %q, want 400 on n", n, apiErr.StatusCode, apiErr.Param, apiErr.Type)
			}
		}
	}
	if s.Calls() != 4 {
		t.Errorf("calls %d, want 4", s.Calls())
	}
}

// TestCompatIgnoresWhatItDoesNotSupport: fields the compatible layer
// ignores or strips do not fail the call and do not change the answer.
func TestCompatIgnoresWhatItDoesNotSupport(t *testing.T) {
	_, client := startCompat(t)
	plain, err := client.Chat.Completions.New(context.Background(), compatParams(question))
	if err != nil {
		t.Fatalf("plain request: %v", err)
	}
	strictTool := weatherTool()
	strictTool.OfFunction.Function.Strict = openai.Bool(true)
	tests := []struct {
		name string
		edit func(*openai.ChatCompletionNewParams)
		// samePrompt: the edit adds nothing the prompt counts.
		samePrompt bool
		wantCall   bool
	}{
		{"temperature above 1", func(p *openai.ChatCompletionNewParams) { p.Temperature = openai.Float(1.7) }, true, false},
		{"response_format", func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Strict: openai.Bool(true)},
			}}
		}, true, false},
		{"audio input is stripped", func(p *openai.ChatCompletionNewParams) {
			p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart(question),
				openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: "UklGRiQAAABXQVZF", Format: "wav"}),
			})}
		}, true, false},
		{"audio output and modalities", func(p *openai.ChatCompletionNewParams) {
			p.Modalities = []string{"text", "audio"}
			p.Audio = openai.ChatCompletionAudioParam{Voice: openai.ChatCompletionAudioParamVoiceUnion{OfString: openai.String("alloy")}, Format: "wav"}
		}, true, false},
		{"system and developer messages anywhere", func(p *openai.ChatCompletionNewParams) {
			p.Messages = []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("Be brief."), openai.UserMessage("Hello there"),
				openai.DeveloperMessage("Answer in English."), openai.UserMessage(question),
			}
		}, false, false},
		{"strict tool", func(p *openai.ChatCompletionNewParams) {
			p.Tools = []openai.ChatCompletionToolUnionParam{strictTool}
		}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := compatParams(question)
			tt.edit(&p)
			resp, err := client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			msg := resp.Choices[0].Message
			switch {
			case tt.wantCall && (len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather"):
				t.Errorf("tool calls %+v: want one get_weather call", msg.ToolCalls)
			case !tt.wantCall && msg.Content != fakeprovider.ReplyText(question):
				t.Errorf("content %q: want the plain reply", msg.Content)
			}
			if tt.samePrompt && resp.Usage.PromptTokens != plain.Usage.PromptTokens {
				t.Errorf("prompt tokens %d, want %d as without the edit", resp.Usage.PromptTokens, plain.Usage.PromptTokens)
			}
		})
	}
}

// TestCompatErrors: failures on the compatible layer come in OpenAI's shape,
// injected ones included, while /v1/messages keeps Anthropic's.
func TestCompatErrors(t *testing.T) {
	tests := []struct {
		name       string
		faults     fakeprovider.Faults
		key        string
		wantStatus int
		wantType   string
		wantCode   string
	}{
		{"wrong key", fakeprovider.Faults{}, "sk-wrong", http.StatusUnauthorized, "invalid_request_error", "invalid_api_key"},
		{"injected overload", fakeprovider.Faults{FailStatus: 529}, testKey, 529, "server_error", ""},
		{"injected rate limit", fakeprovider.Faults{FailStatus: http.StatusTooManyRequests}, testKey, http.StatusTooManyRequests, "requests", "rate_limit_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey, Faults: tt.faults})
			client := sdkclient.OpenAI(base, tt.key)
			_, err := client.Chat.Completions.New(context.Background(), compatParams(question))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("got %v, want *openai.Error", err)
			}
			if apiErr.StatusCode != tt.wantStatus || apiErr.Type != tt.wantType || apiErr.Code != tt.wantCode || apiErr.Message == "" {
				t.Errorf("error %d type %q code %q message %q; want %d %q %q", apiErr.StatusCode, apiErr.Type, apiErr.Code,
					apiErr.Message, tt.wantStatus, tt.wantType, tt.wantCode)
			}
			if raw := apiErr.RawJSON(); strings.Contains(raw, `"request_id"`) {
				t.Errorf("error %s has Anthropic's envelope", raw)
			}
			if calls := s.Requests(); len(calls) != 1 || calls[0].Path != "/v1/chat/completions" {
				t.Errorf("recorded %+v: want the failed call", calls)
			}
			native := sdkclient.Anthropic(base, tt.key)
			_, err = native.Messages.New(context.Background(), messageParams(question))
			var antErr *anthropic.Error
			if !errors.As(err, &antErr) || antErr.StatusCode != tt.wantStatus || antErr.Type() == "" || antErr.RequestID == "" {
				t.Errorf("/v1/messages: %v, want a %d in Anthropic's shape", err, tt.wantStatus)
			}
		})
	}
}
