package record

import (
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

func attrMap(attrs []slog.Attr) map[string]string {
	m := map[string]string{}
	for _, a := range attrs {
		m[a.Key] = a.Value.String()
	}
	return m
}

func TestAttrs(t *testing.T) {
	c := &plan.Candidate{Model: "gpt-4o-mini"}
	r := Record{ID: "req_1", Route: "chat_completions", Model: "fast", Profile: "metered", Status: 200, Served: c,
		Provider: "fake-openai", Attempts: 2, Origin: "native", UpstreamRequestID: "up_1",
		Usage:     meter.Usage{InputTokens: 10, CachedInputTokens: 4, OutputTokens: 3, ReasoningTokens: 1, TotalTokens: 13, Reported: true},
		UsageFrom: meter.SourcePassthrough}
	got := attrMap(r.Attrs(nil, 1500*time.Microsecond))
	for k, want := range map[string]string{
		"request_id": "req_1", "model": "fast", "profile": "metered", "upstream_model": "gpt-4o-mini", "provider": "fake-openai",
		"attempts": "2", "upstream_request_id": "up_1", "usage_from": "passthrough", "input_tokens": "10",
		"cached_input_tokens": "4", "output_tokens": "3", "reasoning_tokens": "1", "duration_ms": "1.5",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	for _, k := range []string{"cache_creation_input_tokens", "code", "error", "on_behalf_of", "lost"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s logged though empty", k)
		}
	}
	if r.Level() != slog.LevelInfo {
		t.Errorf("level %v", r.Level())
	}
	r.Err, r.Cut = errors.New("stream broke"), true
	if r.Level() != slog.LevelWarn || attrMap(r.Attrs(nil, 0))["error"] != "stream broke" {
		t.Errorf("a cut answer is not a warning with its error")
	}
}

func TestServedHeaders(t *testing.T) {
	h := http.Header{}
	r := Record{Attempts: 3, Failover: true, Origin: "native"}
	r.SetServedHeaders(h, []string{"b"}, []string{"b-model"})
	for k, want := range map[string]string{HeaderProvider: "b", HeaderModel: "b-model", HeaderAttempt: "3",
		HeaderFailover: "true", HeaderChannelOrigin: "native"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	r = Record{Attempts: 40}
	r.SetServedHeaders(h, nil, nil)
	if h.Get(HeaderAttempt) != "40" || h.Get(HeaderFailover) != "false" {
		t.Errorf("headers %v", h)
	}
}
