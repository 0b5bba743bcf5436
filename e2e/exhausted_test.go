package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// walkStep is one entry of error.pistra.attempts.
type walkStep struct {
	Provider     string `json:"provider"`
	Channel      string `json:"channel"`
	Model        string `json:"model"`
	Skipped      string `json:"skipped"`
	Status       int    `json:"status"`
	Failure      string `json:"failure"`
	Retries      int    `json:"retries"`
	RetryAfterMS int64  `json:"retry_after_ms"`
}

func (s walkStep) String() string {
	return fmt.Sprintf("%s/%s %s %d %s r%d %dms", s.Provider, s.Channel, s.Model, s.Status, s.Failure, s.Retries, s.RetryAfterMS)
}

// sdkFailure is what a test reads of the error an SDK raised.
type sdkFailure struct {
	status      int
	code        string // error.code (OpenAI) or error.details.error_code (Anthropic)
	message     string
	attempts    []walkStep
	retryAfter  string
	shouldRetry string
}

// callFailing sends one request through the OpenAI or the Anthropic SDK,
// allowed retries of its own, and reads the error it ends with.
func (e *env) callFailing(t *testing.T, anthropicSDK bool, model string, retries int) sdkFailure {
	t.Helper()
	var out sdkFailure
	var obj json.RawMessage // the dialect's error object
	var resp *http.Response
	if anthropicSDK {
		client := e.anthropicClient(keyDefault)
		_, err := client.Messages.New(context.Background(), messageParams(model), aoption.WithMaxRetries(retries))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("want an API error, got %v", err)
		}
		var body struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil {
			t.Fatal(err)
		}
		obj, resp, out.status = body.Error, apiErr.Response, apiErr.StatusCode
	} else {
		client := e.openaiClient(keyDefault)
		_, err := client.Chat.Completions.New(context.Background(), chatParams(model), option.WithMaxRetries(retries))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("want an API error, got %v", err)
		}
		obj, resp, out.status, out.code = json.RawMessage(apiErr.RawJSON()), apiErr.Response, apiErr.StatusCode, apiErr.Code
	}
	var parsed struct {
		Message string `json:"message"`
		Details struct {
			Code string `json:"error_code"`
		} `json:"details"`
		Pistra struct {
			Attempts []walkStep `json:"attempts"`
		} `json:"pistra"`
	}
	if err := json.Unmarshal(obj, &parsed); err != nil {
		t.Fatalf("error object %s: %v", obj, err)
	}
	if anthropicSDK {
		out.code = parsed.Details.Code
	}
	out.message, out.attempts = parsed.Message, parsed.Pistra.Attempts
	out.retryAfter, out.shouldRetry = resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry")
	return out
}

// TestEveryCandidateFailedAsSDKsSeeIt: when the primary and its failover
// both fail, both SDKs get the gateway's account, under the same
// error.pistra.attempts in both dialects: each candidate in order with its
// status, failure class, retries and the wait it asked for. The retry
// headers say what helps, and each SDK's own retries follow them: a
// transient failure is retried after the retry-after given (every
// upstream called again each time), one whose shortest wait is longer
// than an SDK waits is not retried at all.
func TestEveryCandidateFailedAsSDKsSeeIt(t *testing.T) {
	tests := []struct {
		name          string
		anthropic     bool
		primary, back fakeprovider.Faults
		sdkRetries    int
		status        int
		code          string
		retryAfter    string
		shouldRetry   string
		steps         string
		calls         [2]int64 // up-openai, backup-openai
		retried       float64
	}{
		{name: "transient, OpenAI SDK", sdkRetries: 2,
			primary: fakeprovider.Faults{FailStatus: 503, RetryAfter: 30 * time.Millisecond},
			back:    fakeprovider.Faults{FailStatus: 502, RetryAfter: 20 * time.Millisecond},
			status:  502, code: "upstream_error", retryAfter: "1", shouldRetry: "true",
			steps: "up-openai/native gpt-4o-mini 503 5xx r1 30ms; backup-openai/native backup-mini 502 5xx r0 20ms",
			calls: [2]int64{6, 3}, retried: 3},
		{name: "transient, Anthropic SDK", anthropic: true, sdkRetries: 1,
			primary: fakeprovider.Faults{FailStatus: 500, RetryAfter: 30 * time.Millisecond},
			back:    fakeprovider.Faults{FailStatus: 503, RetryAfter: 20 * time.Millisecond},
			status:  503, code: "upstream_error", retryAfter: "1", shouldRetry: "true",
			steps: "up-openai/native gpt-4o-mini 500 5xx r1 30ms; backup-openai/native gpt-4o-mini 503 5xx r0 20ms",
			calls: [2]int64{4, 2}, retried: 2},
		{name: "rate limited for minutes, OpenAI SDK", sdkRetries: 2,
			primary: fakeprovider.Faults{FailStatus: 429, RetryAfter: 3 * time.Minute},
			back:    fakeprovider.Faults{FailStatus: 429, RetryAfter: 2 * time.Minute},
			status:  429, code: "upstream_rate_limited", retryAfter: "120", shouldRetry: "false",
			steps: "up-openai/native gpt-4o-mini 429 429 r0 180000ms; backup-openai/native backup-mini 429 429 r0 120000ms",
			calls: [2]int64{1, 1}},
		{name: "rate limited for minutes, Anthropic SDK", anthropic: true, sdkRetries: 2,
			primary: fakeprovider.Faults{FailStatus: 429, RetryAfter: 3 * time.Minute},
			back:    fakeprovider.Faults{FailStatus: 429, RetryAfter: 2 * time.Minute},
			status:  429, code: "upstream_rate_limited", retryAfter: "120", shouldRetry: "false",
			steps: "up-openai/native gpt-4o-mini 429 429 r0 180000ms; backup-openai/native gpt-4o-mini 429 429 r0 120000ms",
			calls: [2]int64{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t)
			e.setFaults(e.openai, tt.primary)
			e.setFaults(e.backup, tt.back)
			model := "fast" // backup-openai resolves it to backup-mini
			if tt.anthropic {
				model = "gpt-4o-mini" // translated: the alias is not on the Anthropic route
			}
			got := e.callFailing(t, tt.anthropic, model, tt.sdkRetries)
			var steps []string
			for _, s := range got.attempts {
				steps = append(steps, s.String())
			}
			if got.status != tt.status || got.code != tt.code || strings.Join(steps, "; ") != tt.steps {
				t.Fatalf("got %d %q attempts\n  %s\nwant %d %q\n  %s", got.status, got.code, strings.Join(steps, "; "), tt.status, tt.code, tt.steps)
			}
			if got.retryAfter != tt.retryAfter || got.shouldRetry != tt.shouldRetry {
				t.Errorf("retry-after %q x-should-retry %q, want %q %q", got.retryAfter, got.shouldRetry, tt.retryAfter, tt.shouldRetry)
			}
			for _, want := range []string{`1. provider "up-openai" channel "native"`, `2. provider "backup-openai" channel "native"`} {
				if !strings.Contains(got.message, want) {
					t.Errorf("message lacks %s: %s", want, got.message)
				}
			}
			if a, b := e.openai.Calls(), e.backup.Calls(); a != tt.calls[0] || b != tt.calls[1] {
				t.Errorf("upstream calls %d and %d, want %d and %d", a, b, tt.calls[0], tt.calls[1])
			}
			sdkAttempts := float64(tt.sdkRetries + 1)
			if tt.shouldRetry == "false" {
				sdkAttempts = 1
			}
			route := map[bool]string{false: "chat_completions", true: "messages"}[tt.anthropic]
			reason := map[bool]string{false: "5xx", true: "429"}[tt.status == 429]
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   float64
			}{
				{"pistra_requests_total", map[string]string{"route": route, "provider": "none", "code": fmt.Sprint(tt.status)}, sdkAttempts},
				{"pistra_failover_total", map[string]string{"from": "up-openai", "to": "backup-openai", "reason": reason}, sdkAttempts},
				{"pistra_retry_total", map[string]string{"provider": "up-openai"}, tt.retried},
				{"pistra_retry_skipped_total", map[string]string{"provider": "up-openai", "reason": "retry_after_over_cap"}, map[bool]float64{true: 1}[tt.status == 429]},
			} {
				if got := e.counter(c.name, c.labels); got != c.want {
					t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
				}
			}
		})
	}
}

// TestPassedOverCandidatesListed: a candidate the gate passes over (its
// circuit open) is listed, in order, with its reason before the one sent,
// and its time until admission (its cool-down left, under the backup's 30s)
// is the retry-after, being the shortest.
func TestPassedOverCandidatesListed(t *testing.T) {
	e := startCircuit(t, "5s", "10s")
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})
	for range 2 { // four failed attempts open up-openai's circuit
		e.servedBy(t)
	}
	e.setFaults(e.backup, fakeprovider.Faults{FailStatus: 500, RetryAfter: 30 * time.Second})
	got := e.callFailing(t, false, "gpt-4o-mini", 0)
	var steps []string
	for _, s := range got.attempts {
		steps = append(steps, s.Skipped+" "+s.String())
	}
	if len(got.attempts) != 2 || got.attempts[0].Skipped != "circuit_open" || got.attempts[0].RetryAfterMS <= 0 ||
		got.attempts[0].RetryAfterMS > 5000 || got.attempts[1].Provider != "backup-openai" || got.attempts[1].Status != 500 {
		t.Fatalf("attempts %v", steps)
	}
	if got.status != 500 || got.retryAfter != "5" || got.shouldRetry != "true" ||
		!strings.Contains(got.message, `provider "up-openai" channel "native" (gpt-4o-mini) passed over untried: circuit_open`) {
		t.Fatalf("%d retry-after %q x-should-retry %q: %s", got.status, got.retryAfter, got.shouldRetry, got.message)
	}
}
