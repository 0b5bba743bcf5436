package proxy

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/translate"
)

// TestTranslatedOpenAIClient: an OpenAI client served by an Anthropic-only
// provider gets a chat.completion naming the upstream model, and the
// upstream got a Messages request with Anthropic headers only.
func TestTranslatedOpenAIClient(t *testing.T) {
	up := testkit.NewUpstream(map[string][]testkit.Reply{"ant.test": {testkit.JSON(200, antMessage,
		"Request-Id", "req_up", "Anthropic-Ratelimit-Requests-Remaining", "7", "Content-Encoding", "identity")}})
	res, w := call{route: plan.RouteChatCompletions, body: oaiClientBody, cands: []plan.Candidate{toAnt},
		header: map[string]string{"OpenAI-Organization": "org-1", "Authorization": "Bearer client-key", "User-Agent": "sdk/1"}}.serve(t, up)

	if w.Code != 200 || res.Status != 200 || res.Served == nil || res.Provider != "ant" || res.Err != nil {
		t.Fatalf("status %d result %+v: %s", w.Code, res, w.Body)
	}
	h := w.Header()
	if h.Get("Content-Length") != strconv.Itoa(w.Body.Len()) || h.Get("Content-Type") != "application/json" || h.Get("Content-Encoding") != "" {
		t.Errorf("body headers %v for %d bytes", h, w.Body.Len())
	}
	if h.Get("Request-Id") != "req_up" || h.Get("Anthropic-Ratelimit-Requests-Remaining") != "7" || h.Get("X-Request-Id") != "req_t" ||
		h.Get(record.HeaderChannelOrigin) != "translation:openai_anthropic" {
		t.Errorf("relayed headers %v", h)
	}
	var got struct {
		Object  string
		Model   string
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   string
				ToolCalls []struct{ ID string } `json:"tool_calls"`
			}
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	// The model is the one the upstream reports serving, as on passthrough.
	if got.Object != "chat.completion" || got.Model != "claude-x-20250101" || len(got.Choices) != 1 || got.Choices[0].FinishReason != "tool_calls" ||
		got.Choices[0].Message.Content != "Hi" || got.Choices[0].Message.ToolCalls[0].ID != "toolu_1" || got.Usage.PromptTokens != 17 {
		t.Errorf("client got %s", w.Body)
	}
	wantUsage := meter.Usage{InputTokens: 17, CachedInputTokens: 5, CacheCreationInputTokens: 2, OutputTokens: 7, TotalTokens: 24, Reported: true}
	if res.Usage != wantUsage || res.UsageFrom != meter.SourceTranslator {
		t.Errorf("usage %+v from %q, want %+v", res.Usage, res.UsageFrom, wantUsage)
	}

	c := up.Calls("ant.test")[0]
	if c.Path != "/v1/messages" || c.Header.Get("X-Api-Key") != antSecret || c.Header.Get("Authorization") != "" ||
		c.Header.Get("Openai-Organization") != "" || c.Header.Get("Anthropic-Version") != translate.DefaultAnthropicVersion ||
		c.Header.Get("Accept-Encoding") != "identity" || c.Header.Get("User-Agent") != "sdk/1" {
		t.Errorf("upstream got %s with %v", c.Path, c.Header)
	}
	var sent struct {
		Model     string
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.Unmarshal([]byte(c.Body), &sent); err != nil || sent.Model != "claude-x" || sent.MaxTokens != 333 {
		t.Errorf("upstream body %s", c.Body)
	}
}

// TestTranslatedAnthropicVersion: the version sent is the provider's, else
// the client's, else the default, and the body is written for it.
func TestTranslatedAnthropicVersion(t *testing.T) {
	body := `{"model":"public","temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, client, want string
		cand               plan.Candidate
		host               string
	}{
		{"default", "", "2023-06-01", toAnt, "ant.test"},
		{"client's", "2026-10-21", "2026-10-21", toAnt, "ant.test"},
		{"provider's wins", "2023-06-01", "2026-10-21", toAnt26, "ant26.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{tt.host: {testkit.JSON(200, antMessage)}})
			res, _ := call{route: plan.RouteChatCompletions, body: body, cands: []plan.Candidate{tt.cand},
				header: map[string]string{"Anthropic-Version": tt.client}}.serve(t, up)
			if res.Status != 200 {
				t.Fatalf("status %d: %v", res.Status, res.Err)
			}
			c := up.Calls(tt.host)[0]
			if got := c.Header.Values("Anthropic-Version"); len(got) != 1 || got[0] != tt.want {
				t.Errorf("anthropic-version %v, want %s", got, tt.want)
			}
			// 2026-10-21 refuses temperature even at its default.
			if got := strings.Contains(c.Body, `"temperature"`); got != (tt.want < "2026-10-21") {
				t.Errorf("version %s, temperature sent: %v: %s", tt.want, got, c.Body)
			}
		})
	}
}

// TestTranslatedErrors: upstream error statuses reach the client in its
// own error shape with the upstream's message and retry hints.
func TestTranslatedErrors(t *testing.T) {
	antOverloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	oaiRateLimited := `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	tests := []struct {
		name       string
		c          call
		replies    map[string][]testkit.Reply
		status     int
		wantBody   []string
		attempts   int
		retryAfter string
	}{
		{"529 to an OpenAI client", call{route: plan.RouteChatCompletions, body: oaiClientBody, cands: []plan.Candidate{toAnt}},
			map[string][]testkit.Reply{"ant.test": {testkit.JSON(529, antOverloaded, "Retry-After", "0")}},
			503, []string{`"message":"Overloaded"`, `"type":"server_error"`, `"code":"overloaded_error"`}, 2, "0"},
		{"429 to an Anthropic client", call{route: plan.RouteMessages, body: antClientBody, cands: []plan.Candidate{toOAI}},
			map[string][]testkit.Reply{"oai.test": {testkit.JSON(429, oaiRateLimited, "Retry-After", "0")}},
			429, []string{`"type":"error"`, `"rate_limit_error"`, `"message":"Rate limit reached"`}, 2, "0"},
		{"400 relayed at once", call{route: plan.RouteChatCompletions, body: oaiClientBody, cands: []plan.Candidate{toAnt}},
			map[string][]testkit.Reply{"ant.test": {testkit.JSON(400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`)}},
			400, []string{`"message":"bad"`, `"type":"invalid_request_error"`}, 1, ""},
		{"a lone candidate's final failure is translated", call{route: plan.RouteChatCompletions, body: oaiClientBody, cands: []plan.Candidate{toAnt}},
			map[string][]testkit.Reply{"ant.test": {testkit.JSON(500, `{"type":"error","error":{"type":"api_error","message":"boom"}}`)}},
			500, []string{`"message":"boom"`, `"type":"server_error"`}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, w := tt.c.serve(t, testkit.NewUpstream(tt.replies))
			if w.Code != tt.status || res.Status != tt.status || res.Attempts != tt.attempts || res.Provider == metrics.NoProvider {
				t.Fatalf("status %d (result %d, %d attempts, by %q), want %d after %d: %s", w.Code, res.Status, res.Attempts, res.Provider, tt.status, tt.attempts, w.Body)
			}
			for _, want := range tt.wantBody {
				if !strings.Contains(w.Body.String(), want) {
					t.Errorf("body lacks %s: %s", want, w.Body)
				}
			}
			if w.Header().Get("Retry-After") != tt.retryAfter || w.Header().Get("Content-Length") != strconv.Itoa(w.Body.Len()) {
				t.Errorf("headers %v", w.Header())
			}
		})
	}
}

// TestTranslatedFailoverAndRetry: a same-dialect primary that fails moves
// to a translated candidate, whose retries resend one translation.
func TestTranslatedFailoverAndRetry(t *testing.T) {
	up := testkit.NewUpstream(map[string][]testkit.Reply{
		"oai.test": {testkit.JSON(503, `{"error":{"message":"down"}}`)},
		"ant.test": {testkit.JSON(500, `{"type":"error","error":{"type":"api_error","message":"boom"}}`), testkit.JSON(200, antMessage)},
	})
	res, w := call{route: plan.RouteChatCompletions, body: oaiClientBody, cands: []plan.Candidate{oaiSame, toAnt}}.serve(t, up)
	if res.Status != 200 || res.Provider != "ant" || res.Attempts != 4 || !strings.Contains(w.Body.String(), `"model":"claude-x-20250101"`) {
		t.Fatalf("result %+v: %s", res, w.Body)
	}
	ant := up.Calls("ant.test")
	if len(ant) != 2 || ant[0].Body != ant[1].Body || !strings.Contains(ant[0].Body, `"max_tokens":333`) {
		t.Errorf("translated attempts %+v", ant)
	}
	if got := up.Calls("oai.test")[0].Body; got != `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}` {
		t.Errorf("same-dialect attempt got %s", got)
	}
}

// TestTranslationRefused: a request the translator cannot carry is the
// client's 400, sent nowhere, and not failed over.
func TestTranslationRefused(t *testing.T) {
	functions := `{"model":"public","functions":[{"name":"f"}],"messages":[{"role":"user","content":"hi"}]}`
	filePart := `{"model":"public","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f1"}}]}]}`
	for name, body := range map[string]string{"functions API": functions, "file part": filePart} {
		t.Run(name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{"ant.test": {testkit.JSON(200, antMessage)}, "ant26.test": {testkit.JSON(200, antMessage)}})
			res, w := call{route: plan.RouteChatCompletions, body: body, cands: []plan.Candidate{toAnt, toAnt26}}.serve(t, up)
			if w.Code != 400 || res.Code != dialect.CodeUntranslatable || res.Attempts != 0 || up.Count() != 0 {
				t.Fatalf("status %d code %q attempts %d calls %d: %s", w.Code, res.Code, res.Attempts, up.Count(), w.Body)
			}
			var e struct {
				Error struct{ Code, Message string }
			}
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Code != string(dialect.CodeUntranslatable) || !strings.Contains(e.Error.Message, "anthropic") {
				t.Errorf("error body %s", w.Body)
			}
		})
	}
}

// TestUntranslatableCandidateIsPassedOver: a translated candidate whose
// translator refuses the body is passed over, without a failover counted or
// an upstream call, for a later candidate that needs no translation.
func TestUntranslatableCandidateIsPassedOver(t *testing.T) {
	filePart := `{"model":"public","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f1"}}]}]}`
	up := testkit.NewUpstream(map[string][]testkit.Reply{"oai.test": {testkit.JSON(200, oaiCompletion)}})
	res, w := call{route: plan.RouteChatCompletions, body: filePart, cands: []plan.Candidate{toAnt, oaiSame}}.serve(t, up)
	if w.Code != 200 || res.Served == nil || res.Served.Provider != oaiSame.Provider || res.Attempts != 1 || len(up.Calls("ant.test")) != 0 {
		t.Fatalf("status %d result %+v calls %d: %s", w.Code, res, up.Count(), w.Body)
	}
	if c := up.Calls("oai.test")[0]; !strings.Contains(c.Body, `"type":"file"`) {
		t.Errorf("the native candidate got %s", c.Body)
	}
}

// TestTranslatedAnthropicClient: a non-stream Anthropic client gets a
// message naming the upstream model, with OpenAI usage converted.
func TestTranslatedAnthropicClient(t *testing.T) {
	up := testkit.NewUpstream(map[string][]testkit.Reply{"oai.test": {testkit.JSON(200, oaiCompletion, "X-Request-Id", "req_oai")}})
	res, w := call{route: plan.RouteMessages, body: antClientBody, cands: []plan.Candidate{toOAI}}.serve(t, up)
	if res.Status != 200 || w.Header().Get("Request-Id") != "req_t" || w.Header().Get("X-Request-Id") != "req_oai" {
		t.Fatalf("result %+v headers %v", res, w.Header())
	}
	var got struct {
		Type, Model string
		StopReason  string `json:"stop_reason"`
		Usage       struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Type != "message" || got.Model != "gpt-x-2025" ||
		got.StopReason != "end_turn" || got.Usage.InputTokens != 9 || got.Usage.OutputTokens != 3 {
		t.Errorf("client got %s", w.Body)
	}
	if c := up.Calls("oai.test")[0]; !strings.Contains(c.Body, `"max_completion_tokens":50`) {
		t.Errorf("upstream body %s", c.Body)
	}
}

// TestTranslatedMalformedAnswer: a 2xx the translator cannot read is the
// gateway's 502, not a garbled success: not JSON, a failed attempt; JSON
// not of the answer's shape, served (its usage settles) but not relayed.
// Either way the SDK is told a retry may get a better one.
func TestTranslatedMalformedAnswer(t *testing.T) {
	for body, served := range map[string]bool{`<html>proxy</html>`: false, `{"id":"msg_1","type":"message","content":"not a list"}`: true} {
		up := testkit.NewUpstream(map[string][]testkit.Reply{"ant.test": {testkit.JSON(200, body)}})
		res, w := call{route: plan.RouteChatCompletions, body: oaiClientBody, cands: []plan.Candidate{toAnt}}.serve(t, up)
		if w.Code != 502 || res.Code != dialect.CodeUpstreamInvalidResponse || (res.Served != nil) != served || res.Err == nil {
			t.Fatalf("%s: status %d result %+v: %s", body, w.Code, res, w.Body)
		}
		if got := w.Header().Get("X-Should-Retry"); got != "true" {
			t.Errorf("%s: x-should-retry %q, want true", body, got)
		}
	}
}

func TestReadBounded(t *testing.T) {
	for _, n := range []int{0, 1, 100, 17 << 10, 40 << 10} {
		buf := GetBuffer()
		src := strings.Repeat("x", n)
		err := ReadBounded(strings.NewReader(src), buf, 32<<10)
		if n <= 32<<10 && (err != nil || string(*buf) != src) {
			t.Errorf("%d bytes: %v, read %d", n, err, len(*buf))
		}
		if n > 32<<10 && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%d bytes: %v", n, err)
		}
		PutBuffer(buf)
	}
}
