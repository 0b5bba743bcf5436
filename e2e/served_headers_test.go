package e2e

import (
	"context"
	"net/http"
	"testing"

	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// wantServed checks the headers naming what served an answer.
func wantServed(t *testing.T, h http.Header, provider, model, attempt, failover string) {
	t.Helper()
	got := [4]string{h.Get("Pistra-Provider"), h.Get("Pistra-Model"), h.Get("Pistra-Attempt"), h.Get("Pistra-Failover")}
	if want := [4]string{provider, model, attempt, failover}; got != want {
		t.Errorf("served by (provider, model, attempt, failover) %q, want %q", got, want)
	}
	if h.Get("Pistra-Channel-Origin") == "" {
		t.Errorf("no Pistra-Channel-Origin on a served answer")
	}
}

// TestServedHeaders: what the SDKs read of an answer names the provider,
// the upstream model after that provider's own aliases, which upstream
// request served and whether a failover happened.
func TestServedHeaders(t *testing.T) {
	tests := []struct {
		name                               string
		faults                             fakeprovider.Faults
		provider, model, attempt, failover string
		// streamAttempt is the attempt of a stream sent next: the one
		// failure a retry absorbed is spent by then.
		streamAttempt string
	}{
		{"first attempt", fakeprovider.Faults{}, "up-openai", "gpt-4o-mini", "1", "false", "1"},
		{"after a retry", fakeprovider.Faults{FailStatus: 502, FailCount: 1}, "up-openai", "gpt-4o-mini", "2", "false", "1"},
		{"after a failover", fakeprovider.Faults{FailStatus: 503}, "backup-openai", "backup-mini", "3", "true", "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			e.setFaults(e.openai, tt.faults)
			client := e.openaiClient(keyDefault)
			var resp *http.Response
			if _, err := client.Chat.Completions.New(context.Background(), chatParams("fast"), option.WithResponseInto(&resp)); err != nil {
				t.Fatal(err)
			}
			wantServed(t, resp.Header, tt.provider, tt.model, tt.attempt, tt.failover)
			// A stream says the same, on its status line.
			got := readChatStream(t, client, chatParams("fast"))
			if got.err != nil {
				t.Fatal(got.err)
			}
			wantServed(t, got.header, tt.provider, tt.model, tt.streamAttempt, tt.failover)
		})
	}
	t.Run("anthropic alias", func(t *testing.T) {
		e := start(t)
		client := e.anthropicClient(keyDefault)
		var resp *http.Response
		if _, err := client.Messages.New(context.Background(), messageParams("smart"), aoption.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		wantServed(t, resp.Header, "up-anthropic", "claude-sonnet-4-5", "1", "false")
	})
}
