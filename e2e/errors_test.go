package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// bigBody is a valid JSON request over the 1 MiB bound the tests configure.
var bigBody = append(append([]byte(`{"model":"fast","pad":"`), bytes.Repeat([]byte("x"), 2<<20)...), `"}`...)

// TestOpenAIErrors checks that every refusal reaches the OpenAI SDK as its
// typed error, with the status and the pistra code in error.code.
func TestOpenAIErrors(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	chat := func(key, model string, opts ...option.RequestOption) error {
		client := e.openaiClient(key)
		_, err := client.Chat.Completions.New(ctx, chatParams(model), opts...)
		return err
	}
	raw := func(contentType, body string) func() error {
		return func() error { return chat(keyDefault, "fast", option.WithRequestBody(contentType, []byte(body))) }
	}
	tests := []struct {
		name   string
		call   func() error
		status int
		code   string
	}{
		{"missing key", func() error { return chat("", "fast", option.WithHeaderDel("Authorization")) }, 401, "missing_api_key"},
		{"x-api-key is not an OpenAI credential", func() error {
			return chat("", "fast", option.WithHeaderDel("Authorization"), option.WithHeader("X-Api-Key", keyDefault))
		}, 401, "missing_api_key"},
		{"wrong key", func() error { return chat("sk-wrong", "fast") }, 401, "invalid_api_key"},
		{"unknown model", func() error { return chat(keyDefault, "no-such-model") }, 404, "model_not_found"},
		{"model outside the profile", func() error { return chat(keyLimited, "gpt-3.5-turbo-instruct") }, 403, "model_not_allowed"},
		{"model not on this route", func() error {
			client := e.openaiClient(keyDefault)
			_, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
				Model: "backup-mini", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")},
			})
			return err
		}, 404, "model_not_on_route"},
		{"malformed JSON", raw("application/json", `{"model":`), 400, "invalid_json"},
		{"not an object", raw("application/json", `["fast"]`), 400, "invalid_json"},
		{"missing model", raw("application/json", `{"messages":[]}`), 400, "missing_model"},
		{"model not a string", raw("application/json", `{"model":42}`), 400, "invalid_model"},
		{"model twice", raw("application/json", `{"model":"fast","model":"gpt-4o"}`), 400, "invalid_model"},
		{"wrong content type", raw("text/plain", `{"model":"fast"}`), 415, "unsupported_media_type"},
		{"body over the limit", func() error {
			return chat(keyDefault, "fast", option.WithRequestBody("application/json", bigBody))
		}, 413, "request_too_large"},
		{"wrong method", func() error {
			client := e.openaiClient(keyDefault)
			return client.Get(ctx, "chat/completions", nil, nil)
		}, 405, "method_not_allowed"},
		{"unknown route", func() error {
			client := e.openaiClient(keyDefault)
			return client.Post(ctx, "chat/nothing", chatParams("fast"), nil)
		}, 404, "route_not_found"},
		{"upstream unreachable", func() error { return chat(keyDefault, "dead-model") }, 502, "upstream_unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiErr := wantOpenAIError(t, tt.call(), tt.status, tt.code)
			if apiErr.Message == "" {
				t.Errorf("no message: %s", apiErr.RawJSON())
			}
		})
	}
	if e.backup.Calls() != 0 || e.anthropic.Calls() != 0 {
		t.Errorf("a refused request reached an upstream")
	}
}

// TestAnthropicErrors checks the same refusals through the Anthropic SDK,
// with the pistra code in error.details.error_code.
func TestAnthropicErrors(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	send := func(client anthropic.Client, model string, opts ...aoption.RequestOption) error {
		_, err := client.Messages.New(ctx, messageParams(model), opts...)
		return err
	}
	bearer := e.anthropicClient(keyDefault)
	raw := func(contentType, body string) func() error {
		return func() error { return send(bearer, "smart", aoption.WithRequestBody(contentType, []byte(body))) }
	}
	tests := []struct {
		name   string
		call   func() error
		status int
		code   string
		typ    string
	}{
		{"missing anthropic-version", func() error { return send(bearer, "smart", aoption.WithHeaderDel("Anthropic-Version")) },
			400, "missing_anthropic_version", "invalid_request_error"},
		{"malformed anthropic-version", func() error { return send(bearer, "smart", aoption.WithHeader("Anthropic-Version", "latest")) },
			400, "invalid_anthropic_version", "invalid_request_error"},
		{"missing key", func() error { return send(bearer, "smart", aoption.WithHeaderDel("Authorization")) },
			401, "missing_api_key", "authentication_error"},
		{"wrong x-api-key", func() error { return send(e.anthropicXAPIKeyClient("sk-wrong"), "smart") },
			401, "invalid_api_key", "authentication_error"},
		{"unknown model", func() error { return send(bearer, "claude-nonexistent") }, 404, "model_not_found", "not_found_error"},
		{"model outside the profile", func() error { return send(e.anthropicXAPIKeyClient(keyLimited), "claude-sonnet-4-5") },
			403, "model_not_allowed", "permission_error"},
		// dead-model's one channel serves chat completions only, whose
		// translator collapses the usage splits the metered profile requires.
		{"every candidate ruled out", func() error { return send(e.anthropicClient(keyMetered), "dead-model") },
			403, "no_candidate", "permission_error"},
		{"malformed JSON", raw("application/json", `{"model":"smart",`), 400, "invalid_json", "invalid_request_error"},
		{"missing model", raw("application/json", `{"max_tokens":1}`), 400, "missing_model", "invalid_request_error"},
		{"wrong content type", raw("application/x-www-form-urlencoded", `model=smart`), 415, "unsupported_media_type", "invalid_request_error"},
		{"body over the limit", func() error { return send(bearer, "smart", aoption.WithRequestBody("application/json", bigBody)) },
			413, "request_too_large", "request_too_large"},
		{"wrong method", func() error { return bearer.Execute(ctx, http.MethodGet, "v1/messages", nil, nil) },
			405, "method_not_allowed", "invalid_request_error"},
		{"upstream unreachable", func() error { return send(bearer, "dead-model") }, 502, "upstream_unreachable", "api_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiErr := wantAnthropicError(t, tt.call(), tt.status, tt.code)
			if string(apiErr.Type()) != tt.typ || apiErr.RequestID == "" || apiErr.Message == "" {
				t.Errorf("type %q request id %q message %q", apiErr.Type(), apiErr.RequestID, apiErr.Message)
			}
			// A model the key may not use is answered with what it may.
			if tt.code == "model_not_allowed" && !strings.Contains(apiErr.Message, "claude-haiku-4-5") {
				t.Errorf("the refusal does not list the key's models: %q", apiErr.Message)
			}
		})
	}
	if e.anthropic.Calls() != 0 {
		t.Errorf("a refused request reached the upstream")
	}
	// Any version date is accepted, including ones newer than pistra.
	if err := send(bearer, "smart", aoption.WithHeader("Anthropic-Version", "2027-03-01")); err != nil {
		t.Errorf("a future anthropic-version was refused: %v", err)
	}
}

// TestModelErrorsListWhatTheKeyMayUse checks the 404/403 messages name the
// models the key may use on the route.
func TestModelErrorsListWhatTheKeyMayUse(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyLimited)
	_, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-3.5-turbo-instruct"))
	apiErr := wantOpenAIError(t, err, http.StatusForbidden, "model_not_allowed")
	if !bytes.Contains([]byte(apiErr.Message), []byte("gpt-4o-mini")) || apiErr.Param != "model" {
		t.Fatalf("message %q param %q", apiErr.Message, apiErr.Param)
	}
}
