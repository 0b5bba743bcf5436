package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The gateway writes a request's log line and counts its stream failure
// as the handler finishes, which a streaming client may not wait for: it
// has read the last byte, or the cut, by then. These helpers wait, a
// bounded time, for what the tests read.

// settleWait bounds every wait for the gateway to finish a request.
const settleWait = 5 * time.Second

// eventually polls cond until it holds or settleWait passes, and reports
// whether it held.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(settleWait)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requestLine returns the request log line of the request with id, waiting
// for it to be written.
func (e *env) requestLine(id string) map[string]any {
	e.t.Helper()
	if id == "" {
		e.t.Fatal("no request id to find the log line by")
	}
	var rec map[string]any
	found := eventually(func() bool {
		for _, line := range strings.Split(e.logs.String(), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == "request" && r["request_id"] == id {
				rec = r
				return true
			}
		}
		return false
	})
	if !found {
		e.t.Fatalf("no request log line for request %s", id)
	}
	return rec
}

// waitCounter waits for a counter sample to reach want and returns what it
// read last.
func (e *env) waitCounter(name string, labels map[string]string, want float64) float64 {
	e.t.Helper()
	var got float64
	eventually(func() bool {
		got = e.counter(name, labels)
		return got >= want
	})
	return got
}

// tokens reads gen_ai_client_token_usage_total for one provider, upstream
// model and token type.
func (e *env) tokens(provider, model, typ string) float64 {
	e.t.Helper()
	return e.counter("gen_ai_client_token_usage_total",
		map[string]string{"gen_ai_provider_name": provider, "gen_ai_request_model": model, "gen_ai_token_type": typ})
}

// tokenTypes are the types gen_ai_client_token_usage_total counts.
var tokenTypes = []string{"input", "output", "cached_input", "cache_creation_input", "reasoning"}

// wantTokens checks the counter carries exactly want for provider and
// model, a type absent from want counting zero, once the request is
// logged (the counter is added just before).
func (e *env) wantTokens(t *testing.T, provider, model string, want map[string]float64) {
	t.Helper()
	for _, typ := range tokenTypes {
		if got := e.tokens(provider, model, typ); got != want[typ] {
			t.Errorf("gen_ai_client_token_usage_total{%s, %s, %s} = %v, want %v", provider, model, typ, got, want[typ])
		}
	}
}

// wantUsageLogged checks a request log line reports passthrough usage of
// input and output tokens.
func wantUsageLogged(t *testing.T, rec map[string]any, input, output int64) {
	t.Helper()
	if rec["usage_from"] != "passthrough" || rec["input_tokens"] != float64(input) || rec["output_tokens"] != float64(output) {
		t.Errorf("log line usage_from=%v input_tokens=%v output_tokens=%v, want passthrough %d %d (line %v)",
			rec["usage_from"], rec["input_tokens"], rec["output_tokens"], input, output, rec)
	}
}
