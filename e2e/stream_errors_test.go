package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// A stream whose first event is an error was never committed: it is a
// failed attempt, as a 5xx is. An error event after the stream started
// reaches the client as the upstream sent it.

// TestOpeningErrorFailsOver: an upstream whose stream opens with an error
// event is retried, then failed over, and the client reads the healthy
// provider's stream from its start, never the error.
func TestOpeningErrorFailsOver(t *testing.T) {
	failovers := map[string]string{"from": "up-openai", "to": "backup-openai", "reason": "5xx"}
	t.Run("chat", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.openai, breaks(fakeprovider.BreakOpeningError, 0))
		got := readChatStream(t, e.openaiClient(keyDefault), chatParams("fast"))
		if got.err != nil || got.acc.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
			t.Fatalf("stream %v, content %q", got.err, got.acc.Choices[0].Message.Content)
		}
		wantServed(t, got.header, "backup-openai", "backup-mini", "3", "true")
		wantCalls(t, map[*fakeprovider.Server]int64{e.openai: 2, e.backup: 1}, e.names())
		if n := e.counter("pistra_failover_total", failovers); n != 1 {
			t.Errorf("failovers %v, want 1 on 5xx", n)
		}
	})
	t.Run("chat, one opening error absorbed by a retry", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.openai, breaks(fakeprovider.BreakOpeningError, 1))
		got := readChatStream(t, e.openaiClient(keyDefault), chatParams("fast"))
		if got.err != nil || got.acc.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
			t.Fatalf("stream %v, content %q", got.err, got.acc.Choices[0].Message.Content)
		}
		wantServed(t, got.header, "up-openai", "gpt-4o-mini", "2", "false")
		wantCalls(t, map[*fakeprovider.Server]int64{e.openai: 2, e.backup: 0}, e.names())
	})
	t.Run("responses", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.openai, breaks(fakeprovider.BreakOpeningError, 0))
		got := readResponsesStream(e.openaiClient(keyDefault), responsesParams("fast"))
		if got.err != nil || !got.completed || got.errMessage != "" || got.types[0] != "response.created" {
			t.Fatalf("stream %v: events %v", got.err, got.types)
		}
		if got.text != fakeprovider.ReplyText(prompt) {
			t.Errorf("text %q", got.text)
		}
		wantServed(t, got.header, "backup-openai", "backup-mini", "3", "true")
		wantCalls(t, map[*fakeprovider.Server]int64{e.openai: 2, e.backup: 1}, e.names())
	})
	t.Run("messages", func(t *testing.T) {
		e, backup := startWithAnthropicBackup(t)
		e.setFaults(e.anthropic, breaks(fakeprovider.BreakOpeningError, 0))
		got := readMessageStream(e.anthropicClient(keyDefault), messageParams("claude-haiku-4-5"))
		if got.err != nil || replyOf(&got.msg) != fakeprovider.ReplyText(prompt) || got.msg.StopReason != "end_turn" {
			t.Fatalf("stream %v, reply %q", got.err, replyOf(&got.msg))
		}
		wantServed(t, got.resp.Header, "backup-anthropic", "claude-haiku-4-5", "4", "true")
		// up-anthropic retries 5xx twice before it moves on.
		wantCalls(t, map[*fakeprovider.Server]int64{e.anthropic: 3, backup: 1}, map[*fakeprovider.Server]string{e.anthropic: "up-anthropic", backup: "backup-anthropic"})
		moved := map[string]string{"from": "up-anthropic", "to": "backup-anthropic", "reason": "5xx"}
		if n := e.counter("pistra_failover_total", moved); n != 1 {
			t.Errorf("failovers %v, want 1 on 5xx", n)
		}
	})
	t.Run("messages with nowhere to go", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.anthropic, breaks(fakeprovider.BreakOpeningError, 0))
		got := readMessageStream(e.anthropicClient(keyDefault), messageParams("claude-haiku-4-5"))
		wantAnthropicError(t, got.err, http.StatusBadGateway, "upstream_invalid_response")
		if strings.Contains(got.err.Error(), "message_start") {
			t.Errorf("an event reached the client: %v", got.err)
		}
		wantCalls(t, map[*fakeprovider.Server]int64{e.anthropic: 3}, e.names())
	})
}

// wantUpstreamErrorCounted checks a mid-stream error event was counted for
// provider as an upstream error, not as an incomplete stream, and logged
// with the upstream's message.
func (e *env) wantUpstreamErrorCounted(t *testing.T, id, provider, message string) {
	t.Helper()
	rec := e.requestLine(id)
	if msg, _ := rec["error"].(string); !strings.Contains(msg, message) || rec["status"] != float64(200) {
		t.Errorf("log line %v: want the upstream's error %q", rec, message)
	}
	upstream := map[string]string{"provider": provider, "reason": "upstream_error"}
	if got := e.waitCounter("pistra_stream_failures_total", upstream, 1); got != 1 {
		t.Errorf("pistra_stream_failures_total%v = %v, want 1", upstream, got)
	}
	if got := e.counter("pistra_stream_failures_total", map[string]string{"provider": provider, "reason": "incomplete"}); got != 0 {
		t.Errorf("the upstream's error was also counted as an incomplete stream")
	}
	if e.backup.Calls() != 0 {
		t.Errorf("a committed stream was failed over")
	}
}

// TestMidStreamError: an error event after the content started reaches the
// client as the upstream sent it, after the content, and is a failure.
func TestMidStreamError(t *testing.T) {
	t.Run("chat", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.openai, breaks(fakeprovider.BreakMidError, 0))
		got := readChatStream(t, e.openaiClient(keyDefault), chatParams("fast"))
		var se *ssestream.StreamError
		if !errors.As(got.err, &se) || !strings.Contains(se.Message, fakeprovider.InjectedStreamError) || strings.Contains(se.Message, incompleteCode) {
			t.Fatalf("stream ended with %T %v, want the upstream's error", got.err, got.err)
		}
		if c := got.acc.Choices; len(c) != 1 || c[0].Message.Content != "Hello" {
			t.Errorf("content before the error %+v, want the first word", c)
		}
		wantCalls(t, map[*fakeprovider.Server]int64{e.openai: 1}, e.names())
		e.wantUpstreamErrorCounted(t, got.header.Get("Pistra-Request-Id"), "up-openai", fakeprovider.InjectedStreamError)
	})
	t.Run("responses", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.openai, breaks(fakeprovider.BreakMidError, 0))
		got := readResponsesStream(e.openaiClient(keyDefault), responsesParams("fast"))
		// The SDK takes a Responses error event as an event (it has no
		// top-level "error"); the gateway adds nothing after it.
		if got.err != nil || got.errMessage != fakeprovider.InjectedStreamError || got.types[len(got.types)-1] != "error" {
			t.Fatalf("stream %v, events %v", got.err, got.types)
		}
		if got.text != "Hello" {
			t.Errorf("text before the error %q", got.text)
		}
		wantCalls(t, map[*fakeprovider.Server]int64{e.openai: 1}, e.names())
		e.wantUpstreamErrorCounted(t, got.header.Get("Pistra-Request-Id"), "up-openai", fakeprovider.InjectedStreamError)
	})
	t.Run("messages", func(t *testing.T) {
		e := start(t)
		e.setFaults(e.anthropic, breaks(fakeprovider.BreakMidError, 0))
		got := readMessageStream(e.anthropicClient(keyDefault), messageParams("claude-haiku-4-5"))
		var apiErr *anthropic.Error
		if !errors.As(got.err, &apiErr) || apiErr.Type() != "overloaded_error" || apiErr.ErrorCode() != "" {
			t.Fatalf("stream ended with %T %v, want the upstream's overloaded_error", got.err, got.err)
		}
		if replyOf(&got.msg) != "Hello" {
			t.Errorf("text before the error %q", replyOf(&got.msg))
		}
		wantCalls(t, map[*fakeprovider.Server]int64{e.anthropic: 1}, e.names())
		e.wantUpstreamErrorCounted(t, got.resp.Header.Get("Pistra-Request-Id"), "up-anthropic", "overloaded_error: Overloaded")
	})
}
