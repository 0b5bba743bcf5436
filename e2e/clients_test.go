package e2e

import (
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// openaiClient talks to the gateway as the OpenAI SDK does.
func (e *env) openaiClient(key string, opts ...option.RequestOption) openai.Client {
	return sdkclient.OpenAI(e.baseURL(), key, opts...)
}

// anthropicClient talks to the gateway as the current Anthropic SDK does:
// Authorization: Bearer plus anthropic-version 2026-10-21.
func (e *env) anthropicClient(key string, opts ...aoption.RequestOption) anthropic.Client {
	return sdkclient.Anthropic(e.baseURL(), key, opts...)
}

// counter reads one of the gateway's counters, summed over the samples
// whose labels include labels.
func (e *env) counter(name string, labels map[string]string) float64 {
	e.t.Helper()
	return testkit.Counter(e.t, e.srv.Metrics().Registry(), name, labels)
}

// anthropicXAPIKeyClient authenticates the way older Anthropic SDKs do:
// x-api-key with anthropic-version 2023-06-01, no Authorization header.
func (e *env) anthropicXAPIKeyClient(key string) anthropic.Client {
	return sdkclient.Anthropic(e.baseURL(), "",
		aoption.WithHeader("X-Api-Key", key), aoption.WithHeader("Anthropic-Version", "2023-06-01"))
}

// wantOpenAIError checks err is the OpenAI SDK's typed error with status and
// pistra code.
func wantOpenAIError(t *testing.T, err error, status int, code string) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want *openai.Error %d %s, got %T %v", status, code, err, err)
	}
	if apiErr.StatusCode != status || apiErr.Code != code {
		t.Fatalf("got %d code %q, want %d %q: %s", apiErr.StatusCode, apiErr.Code, status, code, apiErr.RawJSON())
	}
	return apiErr
}

// wantAnthropicError checks err is the Anthropic SDK's typed error with
// status and pistra code (read from error.details.error_code).
func wantAnthropicError(t *testing.T, err error, status int, code string) *anthropic.Error {
	t.Helper()
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want *anthropic.Error %d %s, got %T %v", status, code, err, err)
	}
	if apiErr.StatusCode != status || string(apiErr.ErrorCode()) != code {
		t.Fatalf("got %d code %q, want %d %q: %s", apiErr.StatusCode, apiErr.ErrorCode(), status, code, apiErr.RawJSON())
	}
	return apiErr
}

// lastCall returns the most recent call a fake received.
func lastCall(t *testing.T, f *fakeprovider.Server) fakeprovider.Recorded {
	t.Helper()
	calls := f.Requests()
	if len(calls) == 0 {
		t.Fatal("the fake provider received no call")
	}
	return calls[len(calls)-1]
}
