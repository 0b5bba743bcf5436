package e2e

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pistra/pistra/internal/fakeprovider"
)

func messageParams(model string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
}

func replyOf(m *anthropic.Message) string {
	var out string
	for _, b := range m.Content {
		if b.Type == "text" {
			out += b.Text
		}
	}
	return out
}

// TestAnthropicMessages authenticates both ways the Anthropic SDKs do and
// checks what reached the upstream.
func TestAnthropicMessages(t *testing.T) {
	e := start(t)
	clients := map[string]struct {
		client  anthropic.Client
		version string
	}{
		"bearer + 2026-10-21":    {e.anthropicClient(keyDefault), "2026-10-21"},
		"x-api-key + 2023-06-01": {e.anthropicXAPIKeyClient(keyDefault), "2023-06-01"},
	}
	for name, tc := range clients {
		client := tc.client
		t.Run(name, func(t *testing.T) {
			var resp *http.Response
			got, err := client.Messages.New(context.Background(), messageParams("smart"),
				aoption.WithResponseInto(&resp), aoption.WithHeader("Anthropic-Beta", "e2e-beta-1"))
			if err != nil {
				t.Fatal(err)
			}
			if replyOf(got) != fakeprovider.ReplyText(prompt) || got.Usage.InputTokens == 0 {
				t.Fatalf("reply %q usage %+v", replyOf(got), got.Usage)
			}
			if resp.Header.Get("Request-Id") == "" || resp.Header.Get("Pistra-Provider") != "up-anthropic" {
				t.Errorf("response headers %v", resp.Header)
			}
			call := lastCall(t, e.anthropic)
			if call.Path != "/v1/messages" || call.Model != "claude-sonnet-4-5" {
				t.Errorf("upstream got %s %q, want the alias resolved", call.Path, call.Model)
			}
			if call.Header.Get("X-Api-Key") != secretAnthropic || call.Header.Get("Authorization") != "" {
				t.Errorf("upstream credentials: x-api-key is not the provider's, or Authorization leaked")
			}
			// The client's anthropic-version and beta pass as sent, over the
			// provider's static 2023-06-01: the body was written for them.
			if call.Header.Get("Anthropic-Version") != tc.version || call.Header.Get("Anthropic-Beta") != "e2e-beta-1" {
				t.Errorf("forwarded headers %v", call.Header)
			}
		})
	}
}

func TestAnthropicMessagesStream(t *testing.T) {
	e := start(t)
	client := e.anthropicClient(keyDefault)
	stream := client.Messages.NewStreaming(context.Background(), messageParams("claude-haiku-4-5"))
	var msg anthropic.Message
	events := 0
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
		events++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if events < 4 || replyOf(&msg) != fakeprovider.ReplyText(prompt) || msg.StopReason != "end_turn" || msg.Usage.OutputTokens == 0 {
		t.Fatalf("%d events: %q stop %q usage %+v", events, replyOf(&msg), msg.StopReason, msg.Usage)
	}
}

func TestAnthropicModels(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	client := e.anthropicClient(keyDefault)
	var ids []string
	pager := client.Models.ListAutoPaging(ctx, anthropic.ModelListParams{Limit: anthropic.Int(2)})
	for pager.Next() {
		m := pager.Current()
		if m.DisplayName == "" || m.CreatedAt.IsZero() {
			t.Errorf("model %+v lacks display_name or created_at", m)
		}
		ids = append(ids, m.ID)
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude-haiku-4-5", "claude-sonnet-4-5", "smart"} {
		if !slices.Contains(ids, want) {
			t.Errorf("list %v lacks %q", ids, want)
		}
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("paging returned %v: not sorted or repeated", ids)
	}
	m, err := client.Models.Get(ctx, "smart", anthropic.ModelGetParams{})
	if err != nil || m.ID != "smart" {
		t.Fatalf("get smart: %+v %v", m, err)
	}
	limited := e.anthropicXAPIKeyClient(keyLimited)
	_, err = limited.Models.Get(ctx, "smart", anthropic.ModelGetParams{})
	wantAnthropicError(t, err, http.StatusNotFound, "model_not_found")
}
