package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

func (e *env) setFaults(f *fakeprovider.Server, faults fakeprovider.Faults) {
	e.t.Helper()
	if err := f.SetFaults(faults); err != nil {
		e.t.Fatal(err)
	}
}

// TestRetryThenFailover: the primary's retries run out on 5xx/429, then the
// request moves to the failover provider, which resolves the alias its own
// way and is sent its own credential. A 4xx never moves on.
func TestRetryThenFailover(t *testing.T) {
	tests := []struct {
		name             string
		faults           fakeprovider.Faults
		stream           bool
		primaryCalls     int64
		backupCalls      int64
		wantStatus       int // 0: success
		retries, moves   float64
		reason, servedBy string
	}{
		{"5xx fails over", fakeprovider.Faults{FailStatus: 503}, false, 2, 1, 0, 1, 1, "5xx", "backup-openai"},
		{"5xx fails over before a stream starts", fakeprovider.Faults{FailStatus: 500}, true, 2, 1, 0, 1, 1, "5xx", "backup-openai"},
		{"429 with a short retry-after is retried, then fails over", fakeprovider.Faults{FailStatus: 429, FailCount: 2, RetryAfter: 10 * time.Millisecond}, false, 2, 1, 0, 1, 1, "429", "backup-openai"},
		// A wait longer than the retry-wait cap (50 ms here) is not taken
		// when another provider can answer: the request moves on at once.
		{"429 asking for longer than the cap fails over at once", fakeprovider.Faults{FailStatus: 429, FailCount: 2, RetryAfter: time.Second}, false, 1, 1, 0, 0, 1, "429", "backup-openai"},
		{"one 5xx is absorbed by a retry", fakeprovider.Faults{FailStatus: 502, FailCount: 1}, false, 2, 0, 0, 1, 0, "5xx", "up-openai"},
		{"4xx is passed through", fakeprovider.Faults{FailStatus: 400}, false, 1, 0, 400, 0, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			e.setFaults(e.openai, tt.faults)
			client := e.openaiClient(keyDefault)
			var resp *http.Response
			var err error
			if tt.stream {
				stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams("fast"), option.WithResponseInto(&resp))
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err = stream.Err(); err == nil && acc.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
					t.Fatalf("stream content %q", acc.Choices[0].Message.Content)
				}
			} else {
				_, err = client.Chat.Completions.New(context.Background(), chatParams("fast"), option.WithResponseInto(&resp))
			}
			if tt.wantStatus != 0 {
				wantOpenAIError(t, err, tt.wantStatus, "") // the fake's own error, code null
			} else if err != nil {
				t.Fatal(err)
			} else if got := resp.Header.Get("Pistra-Provider"); got != tt.servedBy {
				t.Errorf("served by %q, want %q", got, tt.servedBy)
			}
			if e.openai.Calls() != tt.primaryCalls || e.backup.Calls() != tt.backupCalls {
				t.Errorf("calls: primary %d backup %d, want %d %d", e.openai.Calls(), e.backup.Calls(), tt.primaryCalls, tt.backupCalls)
			}
			if tt.backupCalls > 0 {
				call := lastCall(t, e.backup)
				if call.Model != "backup-mini" || call.Header.Get("Authorization") != "Bearer "+secretBackup {
					t.Errorf("backup got model %q and another credential than its own", call.Model)
				}
			}
			if tt.reason != "" {
				if got := testkit.Counter(t, e.srv.Metrics().Registry(), "pistra_retry_total", map[string]string{"provider": "up-openai", "reason": tt.reason}); got != tt.retries {
					t.Errorf("retries %v, want %v", got, tt.retries)
				}
				failovers := map[string]string{"from": "up-openai", "to": "backup-openai", "reason": tt.reason}
				if got := testkit.Counter(t, e.srv.Metrics().Registry(), "pistra_failover_total", failovers); got != tt.moves {
					t.Errorf("failovers %v, want %v", got, tt.moves)
				}
			}
		})
	}
}

// TestConnectFailureFailsOver: the primary's port is closed.
func TestConnectFailureFailsOver(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	got, err := client.Chat.Completions.New(context.Background(), chatParams("flaky"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) || lastCall(t, e.backup).Model != "backup-mini" {
		t.Fatalf("reply %q", got.Choices[0].Message.Content)
	}
	if testkit.Counter(t, e.srv.Metrics().Registry(), "pistra_retry_total", map[string]string{"provider": "dead", "reason": "connect"}) != 1 ||
		testkit.Counter(t, e.srv.Metrics().Registry(), "pistra_failover_total", map[string]string{"from": "dead", "to": "backup-openai", "reason": "connect"}) != 1 {
		t.Errorf("retry/failover not counted")
	}
}

// TestTimeout: a primary slower than its timeout is abandoned for the
// failover provider; with nowhere to go the client gets a 504.
func TestTimeout(t *testing.T) {
	e := start(t)
	e.setFaults(e.openai, fakeprovider.Faults{FirstByteDelay: 10 * time.Second})
	client := e.openaiClient(keyDefault)
	var resp *http.Response
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("fast"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Pistra-Provider") != "backup-openai" {
		t.Errorf("served by %q", resp.Header.Get("Pistra-Provider"))
	}
	_, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  "gpt-3.5-turbo-instruct",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
	})
	apiErr := wantOpenAIError(t, err, http.StatusGatewayTimeout, "upstream_timeout")
	// The gateway's own answer still names the claim routing acted on.
	if apiErr.Response.Header.Get("Pistra-Channel-Origin") == "" {
		t.Errorf("a 504 after an attempt carries no channel origin: %v", apiErr.Response.Header)
	}
}

// TestLastUpstreamStatusKept: when the failover provider fails too, the
// client gets the last upstream's status, with the gateway's account of
// both candidates as the error.
func TestLastUpstreamStatusKept(t *testing.T) {
	e := start(t)
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})
	e.setFaults(e.backup, fakeprovider.Faults{FailStatus: 529})
	client := e.openaiClient(keyDefault)
	_, err := client.Chat.Completions.New(context.Background(), chatParams("fast"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Code != "upstream_error" ||
		!strings.Contains(apiErr.Message, `provider "up-openai"`) || !strings.Contains(apiErr.Message, `provider "backup-openai"`) {
		t.Fatalf("want the backup's 529 naming both providers, got %v", err)
	}
	if apiErr.Response.Header.Get("X-Should-Retry") != "true" || apiErr.Response.Header.Get("X-Request-Id") == "" {
		t.Errorf("headers %v", apiErr.Response.Header)
	}
}

// TestStreamCutReachesClientAsError: an upstream that drops the connection
// mid-stream must not look like a clean end to the client.
func TestStreamCutReachesClientAsError(t *testing.T) {
	e := start(t)
	e.setFaults(e.openai, fakeprovider.Faults{CutAfter: 2})
	e.setFaults(e.anthropic, fakeprovider.Faults{CutAfter: 2})

	client := e.openaiClient(keyDefault)
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams("fast"))
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if stream.Err() == nil {
		t.Errorf("OpenAI stream cut after %d chunks ended cleanly", chunks)
	}

	ac := e.anthropicClient(keyDefault)
	astream := ac.Messages.NewStreaming(context.Background(), messageParams("smart"))
	for astream.Next() {
	}
	if astream.Err() == nil {
		t.Errorf("Anthropic stream cut mid-way ended cleanly")
	}
	if e.backup.Calls() != 0 {
		t.Errorf("a committed stream was failed over")
	}
}

// TestStreamStallIsCut: once a stream is committed, the provider's timeout
// bounds every gap between its events; an upstream that goes quiet is cut
// and the client sees an error, not a hang.
func TestStreamStallIsCut(t *testing.T) {
	e := start(t)
	e.setFaults(e.openai, fakeprovider.Faults{ChunkDelay: 30 * time.Second})
	client := e.openaiClient(keyDefault)
	began := time.Now()
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams("fast"))
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if stream.Err() == nil {
		t.Fatalf("a stalled stream ended cleanly after %d chunks", chunks)
	}
	if chunks == 0 {
		t.Errorf("no chunk arrived before the stall")
	}
	// A failure guard, not a timing assertion: the stall is 30 s, the
	// provider's timeout 2 s.
	if waited := time.Since(began); waited > 20*time.Second {
		t.Errorf("the stall was waited out (%v)", waited)
	}
	if e.backup.Calls() != 0 {
		t.Errorf("a committed stream was failed over")
	}
}
