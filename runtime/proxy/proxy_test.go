package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
)

func testProviders() []plan.Provider {
	native := []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
		Routes: []plan.Route{plan.RouteChatCompletions}, Origin: "native"}}
	return []plan.Provider{
		{Name: "a", BaseURL: "http://a.test/v1", Pool: -1, Channels: native,
			Retry:    plan.Retry{Max: 1, BackoffMS: 1, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx, plan.Failure429}},
			Failover: plan.Failover{To: []int{1}, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx}}},
		{Name: "b", BaseURL: "http://b.test/v1/", Pool: -1, Channels: native},
		{Name: "pool", Pool: 0, Channels: native},
	}
}

func TestServeAttemptLoop(t *testing.T) {
	answer := func(status int) testkit.Reply { return testkit.JSON(status, `{"answered":true}`) }
	ok, e503, e429, e400 := answer(200), answer(503), answer(429), answer(400)
	refused := testkit.Reply{Err: errors.New("dial tcp: connection refused")}
	a := plan.Candidate{Provider: 0, Model: "a-model", Primary: true, Origin: "native"}
	b := plan.Candidate{Provider: 1, Model: "b-model", Origin: "native"}
	pool := plan.Candidate{Provider: 2, Model: "p-model", Primary: true}
	translated := plan.Candidate{Provider: 0, Model: "t", Translate: plan.TranslateAnthropicOpenAI}
	tests := []struct {
		name       string
		cands      []plan.Candidate
		a, b       []testkit.Reply
		status     int
		code       dialect.Code
		served     string
		aN, bN     int
		wantBModel bool
	}{
		{"first answer", []plan.Candidate{a, b}, []testkit.Reply{ok}, []testkit.Reply{ok}, 200, "", "a", 1, 0, false},
		{"retry absorbs a 5xx", []plan.Candidate{a, b}, []testkit.Reply{e503, ok}, []testkit.Reply{ok}, 200, "", "a", 2, 0, false},
		{"retries then failover", []plan.Candidate{a, b}, []testkit.Reply{e503}, []testkit.Reply{ok}, 200, "", "b", 2, 1, true},
		{"429 not in failover.on stays", []plan.Candidate{a, b}, []testkit.Reply{e429}, []testkit.Reply{ok}, 429, "", "a", 2, 0, false},
		{"4xx relayed at once", []plan.Candidate{a, b}, []testkit.Reply{e400}, []testkit.Reply{ok}, 400, "", "a", 1, 0, false},
		{"connect retried", []plan.Candidate{a, b}, []testkit.Reply{refused, ok}, []testkit.Reply{ok}, 200, "", "a", 2, 0, false},
		{"a lone candidate's error relayed", []plan.Candidate{a}, []testkit.Reply{e503}, nil, 503, "", "a", 2, 0, false},
		{"every upstream erred: the gateway answers", []plan.Candidate{a, b}, []testkit.Reply{e503}, []testkit.Reply{e503}, 503, dialect.CodeUpstreamError, metrics.NoProvider, 2, 1, true},
		{"nothing reachable", []plan.Candidate{a, b}, []testkit.Reply{refused}, []testkit.Reply{refused}, 502, dialect.CodeUpstreamUnreachable, metrics.NoProvider, 2, 1, true},
		{"x-should-retry false skips the retry", []plan.Candidate{a, b}, []testkit.Reply{testkit.JSON(503, `{}`, "X-Should-Retry", "false")}, []testkit.Reply{ok}, 200, "", "b", 1, 1, true},
		{"pool passed over", []plan.Candidate{pool, b}, []testkit.Reply{ok}, []testkit.Reply{ok}, 200, "", "b", 0, 1, true},
		{"translation for another route passed over", []plan.Candidate{translated}, []testkit.Reply{ok}, []testkit.Reply{ok}, 501, dialect.CodeUnsupportedCandidate, metrics.NoProvider, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": tt.a, "b.test": tt.b})
			res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: tt.cands,
				providers: testProviders()}.serve(t, up)
			if rec.Code != tt.status || res.Status != tt.status || res.Code != tt.code || res.ProviderLabel() != tt.served {
				t.Fatalf("got %d (result %d %q by %q), want %d %q by %q: %s", rec.Code, res.Status, res.Code, res.Provider,
					tt.status, tt.code, tt.served, rec.Body)
			}
			if tt.code == dialect.CodeUnsupportedCandidate && rec.Header().Get("X-Should-Retry") != "false" {
				t.Errorf("a 501 that no retry can fix says x-should-retry %q", rec.Header().Get("X-Should-Retry"))
			}
			a, b := up.Calls("a.test"), up.Calls("b.test")
			if len(a) != tt.aN || len(b) != tt.bN || res.Attempts != tt.aN+tt.bN {
				t.Fatalf("calls a=%d b=%d attempts=%d, want %d %d", len(a), len(b), res.Attempts, tt.aN, tt.bN)
			}
			for _, c := range a {
				if c.Body != `{"model":"a-model","messages":[]}` {
					t.Errorf("a got %s", c.Body)
				}
			}
			if tt.wantBModel && b[0].Body != `{"model":"b-model","messages":[]}` {
				t.Errorf("b got %s", b[0].Body)
			}
			if res.Served != nil && rec.Header().Get(record.HeaderProvider) != res.Provider {
				t.Errorf("provider header %q", rec.Header().Get(record.HeaderProvider))
			}
			if res.Code != "" {
				var e struct{ Error struct{ Code string } }
				if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code != string(tt.code) {
					t.Errorf("error body %s", rec.Body)
				}
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After-Ms": "1500"}, 1500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "12.5", "Retry-After": "9"}, 12500 * time.Microsecond, true},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After-Ms": "-1"}, 0, false},
		{nil, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got, ok := retryAfter(h, now); got != tt.want || ok != tt.ok {
			t.Errorf("%v: got %v %v, want %v %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

// TestPassthroughVersionHeaders: a same-dialect body is the client's, so the
// client's anthropic-version and beta reach the upstream as sent; the
// provider's static value fills in only when the client sent none.
func TestPassthroughVersionHeaders(t *testing.T) {
	ant26Same := plan.Candidate{Provider: 1, Tier: plan.TierNative, Model: "claude-x", Origin: "native", Primary: true}
	body := `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name          string
		client        map[string]string
		version, beta string
	}{
		{"client's", map[string]string{"Anthropic-Version": "2023-06-01", "Anthropic-Beta": "b1"}, "2023-06-01", "b1"},
		{"provider's fills in", map[string]string{}, "2026-10-21", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{"ant26.test": {testkit.JSON(200, `{"id":"msg_1"}`)}})
			res, _ := call{route: plan.RouteMessages, body: body, header: tt.client, cands: []plan.Candidate{ant26Same}}.serve(t, up)
			if res.Status != 200 {
				t.Fatalf("status %d: %v", res.Status, res.Err)
			}
			h := up.Calls("ant26.test")[0].Header
			if got := h.Values("Anthropic-Version"); len(got) != 1 || got[0] != tt.version {
				t.Errorf("anthropic-version %v, want %s", got, tt.version)
			}
			if got := h.Get("Anthropic-Beta"); got != tt.beta {
				t.Errorf("anthropic-beta %q, want %q", got, tt.beta)
			}
		})
	}
}

// TestRelayedResponseHeaders: on a same-dialect answer the headers the SDKs
// act on reach the client, for a success and for an error the client's SDK
// will retry on; everything else the upstream sent stays behind.
func TestRelayedResponseHeaders(t *testing.T) {
	sdkHeaders := []string{
		"X-Request-Id", "req_up", "Retry-After", "2", "Retry-After-Ms", "1500", "X-Should-Retry", "true",
		"X-Ratelimit-Remaining-Requests", "41", "Anthropic-Ratelimit-Tokens-Remaining", "9000",
		"Openai-Processing-Ms", "87", "Content-Encoding", "identity",
	}
	private := []string{"Set-Cookie", "session=upstream", "Server", "upstream/1.0", "Via", "1.1 edge", "Alt-Svc", `h3=":443"`}
	for _, status := range []int{200, 400} {
		up := testkit.NewUpstream(map[string][]testkit.Reply{"oai.test": {testkit.JSON(status, `{"id":"c1"}`, append(sdkHeaders, private...)...)}})
		res, w := call{route: plan.RouteChatCompletions, body: `{"model":"gpt-x","messages":[]}`, cands: []plan.Candidate{oaiSame}}.serve(t, up)
		if res.Status != status {
			t.Fatalf("status %d, want %d", res.Status, status)
		}
		for i := 0; i < len(sdkHeaders); i += 2 {
			if got := w.Header().Get(sdkHeaders[i]); got != sdkHeaders[i+1] {
				t.Errorf("%d: %s = %q, want %q", status, sdkHeaders[i], got, sdkHeaders[i+1])
			}
		}
		for i := 0; i < len(private); i += 2 {
			if got := w.Header().Get(private[i]); got != "" {
				t.Errorf("%d: %s relayed: %q", status, private[i], got)
			}
		}
	}
}
