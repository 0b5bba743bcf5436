package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// The relay reads what it relays: an answer that breaks before the client
// was sent anything is a failed attempt, retried and failed over; a stream
// that stops short after its status went out ends for the client with the
// gateway's error, never as if complete.

func breaks(b fakeprovider.Break, count int) fakeprovider.Faults {
	return fakeprovider.Faults{Break: b, BreakCount: count}
}

// wantCalls checks how many calls each fake received.
func wantCalls(t *testing.T, want map[*fakeprovider.Server]int64, names map[*fakeprovider.Server]string) {
	t.Helper()
	for f, n := range want {
		if got := f.Calls(); got != n {
			t.Errorf("%s received %d calls, want %d", names[f], got, n)
		}
	}
}

func (e *env) names() map[*fakeprovider.Server]string {
	return map[*fakeprovider.Server]string{e.openai: "up-openai", e.backup: "backup-openai", e.anthropic: "up-anthropic"}
}

// TestNonStreamCut: an answer whose body breaks half-way is never relayed;
// the attempt failed as a connect failure would, so it is retried, then
// failed over, and with nowhere left to go the client gets a 502.
func TestNonStreamCut(t *testing.T) {
	tests := []struct {
		name                      string
		primary, backup           int // BreakCount: -1 none, 0 every answer
		primaryCalls, backupCalls int64
		// What served, "" when the client gets a 502.
		provider, model, attempt, failover string
		retries, moves                     float64
	}{
		{"a cut answer fails over", 0, -1, 2, 1, "backup-openai", "backup-mini", "3", "true", 1, 1},
		{"one cut answer is absorbed by a retry", 1, -1, 2, 0, "up-openai", "gpt-4o-mini", "2", "false", 1, 0},
		{"cut everywhere is a 502", 0, 0, 2, 1, "", "", "", "", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			e.setFaults(e.openai, breaks(fakeprovider.BreakHalfBody, tt.primary))
			if tt.backup >= 0 {
				e.setFaults(e.backup, breaks(fakeprovider.BreakHalfBody, tt.backup))
			}
			var resp *http.Response
			client := e.openaiClient(keyDefault)
			got, err := client.Chat.Completions.New(context.Background(), chatParams("fast"), option.WithResponseInto(&resp))
			switch {
			case tt.provider == "":
				apiErr := wantOpenAIError(t, err, http.StatusBadGateway, "upstream_invalid_response")
				if !strings.Contains(apiErr.Message, "backup-openai") {
					t.Errorf("message %q does not name the provider that failed last", apiErr.Message)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
					t.Errorf("reply %q", got.Choices[0].Message.Content)
				}
				wantServed(t, resp.Header, tt.provider, tt.model, tt.attempt, tt.failover)
				rec := e.requestLine(resp.Header.Get("Pistra-Request-Id"))
				if rec["provider"] != tt.provider || rec["attempts"] != float64(tt.primaryCalls+tt.backupCalls) || rec["usage_from"] != "passthrough" {
					t.Errorf("log line %v", rec)
				}
				// Only the answer served is metered: the cut ones never parsed.
				e.wantTokens(t, tt.provider, tt.model, map[string]float64{"input": float64(got.Usage.PromptTokens), "output": float64(got.Usage.CompletionTokens)})
				if tt.provider != "up-openai" {
					e.wantTokens(t, "up-openai", "gpt-4o-mini", nil)
				}
			}
			wantCalls(t, map[*fakeprovider.Server]int64{e.openai: tt.primaryCalls, e.backup: tt.backupCalls}, e.names())
			if got := e.counter("pistra_retry_total", map[string]string{"provider": "up-openai", "reason": "connect"}); got != tt.retries {
				t.Errorf("retries %v, want %v", got, tt.retries)
			}
			if got := e.counter("pistra_failover_total", map[string]string{"from": "up-openai", "to": "backup-openai", "reason": "connect"}); got != tt.moves {
				t.Errorf("failovers %v, want %v", got, tt.moves)
			}
		})
	}
}

// TestNonStreamCutAnthropic: the Anthropic provider retries 5xx and 429
// only and fails over nowhere, so a cut answer is a 502 at once.
func TestNonStreamCutAnthropic(t *testing.T) {
	e := start(t)
	e.setFaults(e.anthropic, breaks(fakeprovider.BreakHalfBody, 0))
	client := e.anthropicClient(keyDefault)
	got, err := client.Messages.New(context.Background(), messageParams("claude-haiku-4-5"))
	if err == nil {
		t.Fatalf("a cut answer reached the client as %+v", got)
	}
	wantAnthropicError(t, err, http.StatusBadGateway, "upstream_invalid_response")
	wantCalls(t, map[*fakeprovider.Server]int64{e.anthropic: 1}, e.names())
}

// incompleteCode is the gateway's error for a stream that stopped short;
// noTerminal is what it says of one that ended cleanly.
const (
	incompleteCode = "upstream_stream_incomplete"
	noTerminal     = "ended without its terminal event"
)

// wantStreamIncomplete checks what the request that ended so left behind:
// a failure counted for provider, a warning saying why, no failover.
func (e *env) wantStreamIncomplete(t *testing.T, id, provider, why string) {
	t.Helper()
	rec := e.requestLine(id)
	if msg, _ := rec["error"].(string); rec["level"] != "WARN" || rec["status"] != float64(200) || !strings.Contains(msg, why) {
		t.Errorf("log line %v: want a warning with the error", rec)
	}
	incomplete := map[string]string{"provider": provider, "reason": "incomplete"}
	if got := e.waitCounter("pistra_stream_failures_total", incomplete, 1); got != 1 {
		t.Errorf("pistra_stream_failures_total%v = %v, want 1", incomplete, got)
	}
	if e.backup.Calls() != 0 {
		t.Errorf("a committed stream was failed over")
	}
}

// TestStreamWithoutTerminal: a stream that ends cleanly but without its
// terminal event reaches the SDK as an error carrying the gateway's code,
// after everything the upstream sent, in each dialect.
func TestStreamWithoutTerminal(t *testing.T) {
	t.Run("chat", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.openai, breaks(fakeprovider.BreakNoTerminal, 0))
		got := readChatStream(t, e.openaiClient(keyDefault), chatParams("fast"))
		var se *ssestream.StreamError
		if !errors.As(got.err, &se) || !strings.Contains(se.Message, incompleteCode) {
			t.Fatalf("stream ended with %T %v, want a stream error with %s", got.err, got.err, incompleteCode)
		}
		if got.acc.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
			t.Errorf("content before the error %q, want all the upstream sent", got.acc.Choices[0].Message.Content)
		}
		e.wantStreamIncomplete(t, got.header.Get("Pistra-Request-Id"), "up-openai", noTerminal)
	})
	t.Run("responses", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.openai, breaks(fakeprovider.BreakNoTerminal, 0))
		var resp *http.Response
		params := responses.ResponseNewParams{Model: "fast", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
		client := e.openaiClient(keyDefault)
		stream := client.Responses.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
		var text string
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "response.output_text.done" {
				text = ev.Text
			}
		}
		var se *ssestream.StreamError
		if !errors.As(stream.Err(), &se) || !strings.Contains(se.Message, incompleteCode) {
			t.Fatalf("stream ended with %v, want a stream error with %s", stream.Err(), incompleteCode)
		}
		if text != fakeprovider.ReplyText(prompt) {
			t.Errorf("text before the error %q", text)
		}
		e.wantStreamIncomplete(t, resp.Header.Get("Pistra-Request-Id"), "up-openai", noTerminal)
	})
	t.Run("messages", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.anthropic, breaks(fakeprovider.BreakNoTerminal, 0))
		got := readMessageStream(e.anthropicClient(keyDefault), messageParams("claude-haiku-4-5"))
		var apiErr *anthropic.Error
		if !errors.As(got.err, &apiErr) || string(apiErr.ErrorCode()) != incompleteCode || apiErr.Type() != "api_error" {
			t.Fatalf("stream ended with %T %v, want an API error with %s", got.err, got.err, incompleteCode)
		}
		if replyOf(&got.msg) != fakeprovider.ReplyText(prompt) || got.msg.StopReason != "end_turn" {
			t.Errorf("message before the error %q, stop %q", replyOf(&got.msg), got.msg.StopReason)
		}
		e.wantStreamIncomplete(t, got.resp.Header.Get("Pistra-Request-Id"), "up-anthropic", noTerminal)
	})
}

// TestStreamBrokenMidway: an upstream that drops the connection mid-stream
// is reported alike, with the read error.
func TestStreamBrokenMidway(t *testing.T) {
	e := start(t)
	e.setFaults(e.openai, fakeprovider.Faults{CutAfter: 3})
	got := readChatStream(t, e.openaiClient(keyDefault), chatParams("fast"))
	var se *ssestream.StreamError
	if !errors.As(got.err, &se) || !strings.Contains(se.Message, incompleteCode) || !strings.Contains(se.Message, "broke") {
		t.Fatalf("stream ended with %T %v, want a stream error with %s", got.err, got.err, incompleteCode)
	}
	if len(got.chunks) != 3 {
		t.Errorf("%d chunks before the error, want the 3 sent", len(got.chunks))
	}
	e.wantStreamIncomplete(t, got.header.Get("Pistra-Request-Id"), "up-openai", "broke")
}

// TestStreamWithoutTerminalIsCut: on the wire, the gateway's error event is
// the last thing sent, and the connection is cut after it rather than
// ended, so even a client that ignores error events sees a failure.
func TestStreamWithoutTerminalIsCut(t *testing.T) {
	e := start(t)
	e.setFaults(e.openai, breaks(fakeprovider.BreakNoTerminal, 0))
	req, err := http.NewRequest(http.MethodPost, e.baseURL()+"chat/completions",
		strings.NewReader(`{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keyDefault)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Errorf("the stream ended cleanly: want the connection cut")
	}
	events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	last := events[len(events)-1]
	if !strings.HasPrefix(last, `data: {"error":{`) || !strings.Contains(last, `"code":"`+incompleteCode+`"`) || strings.Contains(string(body), "[DONE]") {
		t.Errorf("last event %q, want the gateway's error chunk", last)
	}
}

// anthropicBackupPolicy is the test policy with a second Anthropic
// provider at url, serving claude-haiku-4-5, for up-anthropic to fail
// over to on connect failures and 5xx.
func anthropicBackupPolicy(url string) fixture {
	return func(p policy) testkit.Policy {
		pol := defaultPolicy(p)
		up := pol.Providers["up-anthropic"]
		up.Failover = failover([]string{"backup-anthropic"}, "connect", "5xx")
		pol.Providers["up-anthropic"] = up
		pol.Providers["backup-anthropic"] = anthropicProvider(url, 8192, "claude-haiku-4-5")
		pol.Primary["claude-haiku-4-5"] = "up-anthropic"
		return pol
	}
}

// startWithAnthropicBackup starts the gateway over anthropicBackupPolicy
// and returns the second Anthropic fake too.
func startWithAnthropicBackup(t *testing.T) (*env, *fakeprovider.Server) {
	t.Helper()
	backup, url := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: secretAnthropic})
	return startWith(t, anthropicBackupPolicy(url)), backup
}
