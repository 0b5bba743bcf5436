package proxy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// TestEveryCandidateFailed: when no candidate serves, the answer names each
// one in order (status, failure class, retries, the wait it asked for) in
// the message and in error.pistra.attempts, and its retry headers say what
// would help: retry-after the shortest wait any upstream asked for (none
// when one failed without asking for any, since it may serve a retry at
// once), and x-should-retry false only when every upstream said retrying
// cannot help.
func TestEveryCandidateFailed(t *testing.T) {
	a := plan.Candidate{Provider: 0, Model: "a-model", Primary: true, Origin: "native"}
	b := plan.Candidate{Provider: 1, Model: "b-model", Origin: "native"}
	tests := []struct {
		name          string
		a, b          []testkit.Reply
		status        int
		code          dialect.Code
		retryAfter    string
		shouldRetry   string
		attempts      string
		callsA, callB int
	}{
		{"5xx then connect", []testkit.Reply{testkit.JSON(503, `{}`), testkit.JSON(503, `{}`, "Retry-After-Ms", "20")},
			[]testkit.Reply{{Err: errors.New("dial tcp: connection refused")}},
			502, dialect.CodeUpstreamUnreachable, "", "true", // b may serve a retry at once: no wait

			`[{"provider":"a","channel":"","model":"a-model","status":503,"failure":"5xx","retries":1,"retry_after_ms":20},` +
				`{"provider":"b","channel":"","model":"b-model","failure":"connect","retries":0}]`, 2, 1},
		{"both say a retry cannot help", []testkit.Reply{testkit.JSON(500, `{}`, "X-Should-Retry", "false")},
			[]testkit.Reply{testkit.JSON(502, `{}`, "X-Should-Retry", "false")},
			502, dialect.CodeUpstreamError, "", "false", // the last upstream's status
			`[{"provider":"a","channel":"","model":"a-model","status":500,"failure":"5xx","retries":0},` +
				`{"provider":"b","channel":"","model":"b-model","status":502,"failure":"5xx","retries":0}]`, 1, 1},
		{"a 5xx with no wait, a 429 with a long one", []testkit.Reply{testkit.JSON(503, `{}`)},
			[]testkit.Reply{testkit.JSON(429, `{}`, "Retry-After", "120")},
			429, dialect.CodeUpstreamError, "", "true", // a's 503 may pass on a retry now: b's two minutes must not stop the SDK
			`[{"provider":"a","channel":"","model":"a-model","status":503,"failure":"5xx","retries":1},` +
				`{"provider":"b","channel":"","model":"b-model","status":429,"failure":"429","retries":0,"retry_after_ms":120000}]`, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": tt.a, "b.test": tt.b})
			res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`,
				cands: []plan.Candidate{a, b}, providers: testProviders()}.serve(t, up)
			var got struct {
				Error struct {
					Message string `json:"message"`
					Code    string `json:"code"`
					Pistra  struct {
						Attempts json.RawMessage `json:"attempts"`
					} `json:"pistra"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tt.status || res.Code != tt.code || got.Error.Code != string(tt.code) {
				t.Fatalf("%d %q, want %d %q: %s", rec.Code, got.Error.Code, tt.status, tt.code, rec.Body)
			}
			if string(got.Error.Pistra.Attempts) != tt.attempts {
				t.Errorf("attempts\n %s\nwant\n %s", got.Error.Pistra.Attempts, tt.attempts)
			}
			if h := rec.Header(); h.Get("Retry-After") != tt.retryAfter || h.Get("X-Should-Retry") != tt.shouldRetry {
				t.Errorf("retry-after %q x-should-retry %q, want %q %q", h.Get("Retry-After"), h.Get("X-Should-Retry"), tt.retryAfter, tt.shouldRetry)
			}
			if len(up.Calls("a.test")) != tt.callsA || len(up.Calls("b.test")) != tt.callB {
				t.Errorf("calls a=%d b=%d, want %d %d", len(up.Calls("a.test")), len(up.Calls("b.test")), tt.callsA, tt.callB)
			}
			for _, p := range []string{`1. provider "a"`, `2. provider "b"`, `(a-model)`} {
				if !strings.Contains(got.Error.Message, p) {
					t.Errorf("message lacks %s: %s", p, got.Error.Message)
				}
			}
		})
	}
}

// waitGate refuses every candidate, each with its own wait.
type waitGate map[int]time.Duration

func (g waitGate) Admit(_ *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	e := dialect.Errorf(503, dialect.CodeCircuitOpen, "open")
	e.RetryAfter, e.Transient = g[c.Provider], true
	return nil, &admission.Refusal{Reason: "circuit_open", Error: e}
}

// TestEveryCandidatePassedOver: when no candidate is admitted, the first
// refusal is the answer, listing every candidate passed over, with
// retry-after the soonest any of them may be admitted.
func TestEveryCandidatePassedOver(t *testing.T) {
	a := plan.Candidate{Provider: 0, Model: "a-model", Primary: true, Origin: "native"}
	b := plan.Candidate{Provider: 1, Model: "b-model", Origin: "native"}
	up := testkit.NewUpstream(nil)
	res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{a, b},
		providers: testProviders(), gate: waitGate{0: 5 * time.Second, 1: 1500 * time.Millisecond}}.serve(t, up)
	want := `{"attempts":[{"provider":"a","channel":"","model":"a-model","skipped":"circuit_open","retries":0,"retry_after_ms":5000},` +
		`{"provider":"b","channel":"","model":"b-model","skipped":"circuit_open","retries":0,"retry_after_ms":1500}]}`
	var got struct {
		Error struct {
			Pistra json.RawMessage `json:"pistra"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 503 || res.Code != dialect.CodeCircuitOpen || string(got.Error.Pistra) != want || res.Attempts != 0 {
		t.Fatalf("%d %q after %d attempts: %s", rec.Code, res.Code, res.Attempts, rec.Body)
	}
	if h := rec.Header(); h.Get("Retry-After") != "2" || h.Get("X-Should-Retry") != "true" {
		t.Errorf("retry-after %q x-should-retry %q", h.Get("Retry-After"), h.Get("X-Should-Retry"))
	}
}
