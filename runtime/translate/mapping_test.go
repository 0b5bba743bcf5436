package translate

import (
	"encoding/json"
	"testing"

	"github.com/pistra/pistra/runtime/meter"
)

func TestFinishReasonBothWays(t *testing.T) {
	for _, c := range []struct {
		anthropic, openai string
		back              string // what the OpenAI reason maps back to
	}{
		{"end_turn", "stop", "end_turn"},
		{"stop_sequence", "stop", "end_turn"}, // OpenAI cannot say which sequence
		{"max_tokens", "length", "max_tokens"},
		{"model_context_window_exceeded", "length", "max_tokens"},
		{"tool_use", "tool_calls", "tool_use"},
		{"refusal", "content_filter", "refusal"},
		{"pause_turn", "stop", "end_turn"},
	} {
		if got := finishReason(c.anthropic); got != c.openai {
			t.Errorf("finishReason(%q) = %q, want %q", c.anthropic, got, c.openai)
		}
		if got, _ := stopReason(c.openai, nil, false, false); got != c.back {
			t.Errorf("stopReason(%q) = %q, want %q", c.openai, got, c.back)
		}
	}
	if got, _ := stopReason("stop", nil, true, false); got != "tool_use" {
		t.Errorf("a named tool_choice call finishing with stop = %q, want tool_use", got)
	}
	if got, seq := stopReason("stop", json.RawMessage(`"END"`), false, false); got != "stop_sequence" || seq == nil || *seq != "END" {
		t.Errorf("vLLM stop_reason: %q %v", got, seq)
	}
	if got, _ := stopReason("stop", json.RawMessage(`128009`), false, false); got != "end_turn" {
		t.Errorf("a stop token id is not a stop sequence: %q", got)
	}
}

func TestReasoningEffortBothWays(t *testing.T) {
	for _, effort := range []string{"low", "medium", "high", "xhigh", "max"} {
		th, cfg, err := effortToThinking(effort)
		if err != nil || th.Type != "adaptive" || cfg.Effort != effort {
			t.Fatalf("effortToThinking(%q) = %+v %+v %v", effort, th, cfg, err)
		}
		if back := thinkingToEffort(th, cfg); back != effort {
			t.Errorf("%q came back as %q", effort, back)
		}
	}
	for budget, want := range map[int64]string{1024: "low", 4096: "medium", 10000: "medium", 16384: "high", 60000: "high"} {
		if got := thinkingToEffort(&antThinking{Type: "enabled", BudgetTokens: budget}, nil); got != want {
			t.Errorf("budget %d = %q, want %q", budget, got, want)
		}
	}
	for typ, want := range map[string]string{"adaptive": "medium", "between_tools": "medium", "disabled": "", "unknown": ""} {
		if got := thinkingToEffort(&antThinking{Type: typ}, nil); got != want {
			t.Errorf("thinking %s without an effort = %q, want %q", typ, got, want)
		}
	}
	if _, _, err := effortToThinking("extreme"); err == nil {
		t.Error("an unknown effort was accepted")
	}
}

// TestUsageConversion checks the convention change: Anthropic's input_tokens
// excludes cache traffic, OpenAI's prompt_tokens includes it.
func TestUsageConversion(t *testing.T) {
	u := meter.ReadUsage(meter.ShapeMessages, []byte(`{"input_tokens":21,"cache_creation_input_tokens":188,"cache_read_input_tokens":1873,"output_tokens":9}`))
	o := openAIUsage(u)
	if o.PromptTokens != 21+188+1873 || o.PromptTokensDetails.CachedTokens != 1873 || o.TotalTokens != 21+188+1873+9 {
		t.Errorf("openai usage %+v", o)
	}
	back := anthropicUsage(u)
	if back.InputTokens != 21+188 || back.CacheReadInputTokens != 1873 || back.CacheCreationInputTokens != 0 {
		t.Errorf("anthropic usage %+v: writes should fold into input_tokens", back)
	}
	if got := anthropicUsage(meter.Usage{InputTokens: 5, CachedInputTokens: 9}); got.InputTokens != 0 {
		t.Errorf("cached above prompt must not underflow: %+v", got)
	}
}

// TestDeltaUsageOverwrites checks that message_delta counts replace earlier
// ones and absent counts keep theirs.
func TestDeltaUsageOverwrites(t *testing.T) {
	var total meter.UsageReader
	total.Reset(meter.ShapeMessages)
	start, delta := []byte(`{"input_tokens":21,"cache_read_input_tokens":100,"output_tokens":1}`), []byte(`{"output_tokens":15}`)
	total.Read(start)
	total.Read(delta)
	total.Read(delta)
	if u := total.Usage(); u.InputTokens != 121 || u.OutputTokens != 15 || u.CachedInputTokens != 100 {
		t.Errorf("got %+v", u)
	}
}

func TestErrorTypes(t *testing.T) {
	for status, want := range map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 422: "invalid_request_error",
		429: "rate_limit_error", 500: "api_error", 503: "overloaded_error", 529: "overloaded_error", 504: "timeout_error",
	} {
		if got := anthropicErrorType(status); got != want {
			t.Errorf("anthropicErrorType(%d) = %q, want %q", status, got, want)
		}
	}
}
