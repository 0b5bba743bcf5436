package proxy

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// sseData returns the data payloads of an SSE body, and the event names.
func sseData(t *testing.T, body string) (data, events []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, v)
		}
	}
	return data, events
}

// TestTranslatedStreamToOpenAIClient: chunks flushed as they are
// translated, usage last when asked for, model the upstream's.
func TestTranslatedStreamToOpenAIClient(t *testing.T) {
	body := `{"model":"public","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	up := testkit.NewUpstream(map[string][]testkit.Reply{"ant.test": {testkit.SSE(antEvents...)}})
	res, w := call{route: plan.RouteChatCompletions, body: body, cands: []plan.Candidate{toAnt}}.serve(t, up)
	if res.Status != 200 || res.Cut || res.Err != nil || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("result %+v headers %v", res, w.Header())
	}
	data, _ := sseData(t, w.Body.String())
	if len(data) < 4 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream %s", w.Body)
	}
	var text strings.Builder
	var finish string
	var usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	for _, d := range data[:len(data)-1] {
		var chunk struct {
			Model   string
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(d), &chunk); err != nil || chunk.Model != "claude-x" {
			t.Fatalf("chunk %s: %v", d, err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
	}
	if text.String() != "Hello" || finish != "stop" || usage == nil || usage.PromptTokens != 10 || usage.CompletionTokens != 5 {
		t.Errorf("text %q finish %q usage %+v", text.String(), finish, usage)
	}
	// One flush per upstream read that produced frames: message_start, the
	// two deltas, message_delta and message_stop.
	if w.flushes != 5 {
		t.Errorf("%d flushes, want 5", w.flushes)
	}
	if res.UsageFrom != meter.SourceTranslator || res.Usage.InputTokens != 10 || res.Usage.OutputTokens != 5 {
		t.Errorf("usage %+v from %q", res.Usage, res.UsageFrom)
	}
	if c := up.Calls("ant.test")[0]; !strings.Contains(c.Body, `"stream":true`) {
		t.Errorf("upstream body %s", c.Body)
	}
}

// TestTranslatedStreamToAnthropicClient: every event carries its event:
// line, and the Anthropic headers the client sent stay behind.
func TestTranslatedStreamToAnthropicClient(t *testing.T) {
	body := `{"model":"public","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	up := testkit.NewUpstream(map[string][]testkit.Reply{"oai.test": {testkit.SSE(oaiChunks...)}})
	res, w := call{route: plan.RouteMessages, body: body, cands: []plan.Candidate{toOAI},
		header: map[string]string{"Anthropic-Version": "2023-06-01", "Anthropic-Beta": "b1", "X-Api-Key": "client-key"}}.serve(t, up)
	if res.Status != 200 || res.Cut || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	data, events := sseData(t, w.Body.String())
	if len(events) != len(data) || events[0] != "message_start" || events[len(events)-1] != "message_stop" {
		t.Fatalf("events %v for %d data lines", events, len(data))
	}
	if !strings.Contains(w.Body.String(), `"model":"gpt-x"`) || !strings.Contains(w.Body.String(), `"stop_reason":"end_turn"`) {
		t.Errorf("stream %s", w.Body)
	}
	if res.Usage.InputTokens != 9 || res.Usage.OutputTokens != 3 {
		t.Errorf("usage %+v", res.Usage)
	}
	c := up.Calls("oai.test")[0]
	if c.Path != "/v1/chat/completions" || c.Header.Get("Authorization") != "Bearer "+oaiSecret || c.Header.Get("X-Api-Key") != "" ||
		c.Header.Get("Anthropic-Version") != "" || c.Header.Get("Anthropic-Beta") != "" {
		t.Errorf("upstream got %s with %v", c.Path, c.Header)
	}
	if !strings.Contains(c.Body, `"include_usage":true`) || !strings.Contains(c.Body, `"model":"gpt-x"`) {
		t.Errorf("upstream body %s", c.Body)
	}
}

// TestTranslatedStreamBreaks: an upstream that stops early, whose body
// fails, or that sends an event that cannot be translated, leaves the
// client one error event, the gateway's (upstream_stream_incomplete, naming
// the provider) in its own dialect, after the frames translated so far, and
// a cut connection.
func TestTranslatedStreamBreaks(t *testing.T) {
	chat := `{"model":"public","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	messages := `{"model":"public","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	reset := errors.New("connection reset")
	garbled := "event: content_block_delta\ndata: {nope}\n\n"
	tests := []struct {
		name    string
		route   plan.Route
		body    string
		cand    plan.Candidate
		host    string
		reply   testkit.Reply
		wantErr error
		frame   string // how the client's last frame starts
		message string // the error's message in it
	}{
		{"ends before message_stop", plan.RouteChatCompletions, chat, toAnt, "ant.test", testkit.SSE(antEvents[:4]...),
			translate.ErrIncompleteStream, `data: {"error":`, `the stream from provider \"ant\" ended without its terminal event`},
		{"read fails", plan.RouteChatCompletions, chat, toAnt, "ant.test", brokenSSE(antEvents[:4], reset),
			translate.ErrIncompleteStream, `data: {"error":`, `the stream from provider \"ant\" broke: connection reset`},
		{"an event that cannot be translated", plan.RouteChatCompletions, chat, toAnt, "ant.test",
			testkit.SSE(append(append([]string(nil), antEvents[:4]...), garbled)...),
			translate.ErrUpstreamEvent, `data: {"error":`, `the stream from provider \"ant\" broke: translate: malformed upstream stream event`},
		{"ends before finish_reason, to an Anthropic client", plan.RouteMessages, messages, toOAI, "oai.test", testkit.SSE(oaiChunks[:2]...),
			translate.ErrIncompleteStream, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"",
			`the stream from provider \"oai\" ended without its terminal event`},
		{"read fails, to an Anthropic client", plan.RouteMessages, messages, toOAI, "oai.test", brokenSSE(oaiChunks[:2], reset),
			translate.ErrIncompleteStream, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"",
			`the stream from provider \"oai\" broke: connection reset`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{tt.host: {tt.reply}})
			res, w := call{route: tt.route, body: tt.body, cands: []plan.Candidate{tt.cand}}.serve(t, up)
			if res.Status != 200 || !res.Cut || !errors.Is(res.Err, tt.wantErr) {
				t.Fatalf("result %+v", res)
			}
			frames := sseFrames(w.Body.String())
			last := frames[len(frames)-1]
			if !strings.HasPrefix(last, tt.frame) || !strings.Contains(last, `upstream_stream_incomplete"`) ||
				!strings.Contains(last, tt.message) {
				t.Errorf("last frame %s, want one starting %s with the code and %s", last, tt.frame, tt.message)
			}
			n := 0
			for _, f := range frames {
				if strings.HasPrefix(f, tt.frame) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d error frames, want 1:\n%s", n, w.Body)
			}
			if len(frames) < 2 {
				t.Errorf("the frames translated before the break are missing:\n%s", w.Body)
			}
		})
	}
}

// TestTranslatedAndPassthroughStreamsBreakAlike: a stream broken the same
// way ends for the client with the same error event whether it was
// translated or passed through, in either client dialect: the provider's
// name is all that differs.
func TestTranslatedAndPassthroughStreamsBreakAlike(t *testing.T) {
	chat := `{"model":"public","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	messages := `{"model":"public","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	type side struct {
		cand  plan.Candidate
		host  string
		parts []string // the upstream's stream up to the break
	}
	clients := []struct {
		name               string
		route              plan.Route
		body               string
		passed, translated side
	}{
		{"OpenAI client", plan.RouteChatCompletions, chat, side{oaiSame, "oai.test", oaiChunks[:2]}, side{toAnt, "ant.test", antEvents[:4]}},
		{"Anthropic client", plan.RouteMessages, messages, side{antSame, "ant.test", antEvents[:4]}, side{toOAI, "oai.test", oaiChunks[:2]}},
	}
	breaks := map[string]func(parts []string) testkit.Reply{
		"ends short": func(parts []string) testkit.Reply { return testkit.SSE(parts...) },
		"read fails": func(parts []string) testkit.Reply { return brokenSSE(parts, errors.New("connection reset")) },
	}
	for _, c := range clients {
		for how, reply := range breaks {
			t.Run(c.name+", "+how, func(t *testing.T) {
				var got [2]string
				for i, s := range []side{c.passed, c.translated} {
					up := testkit.NewUpstream(map[string][]testkit.Reply{s.host: {reply(s.parts)}})
					res, w := call{route: c.route, body: c.body, cands: []plan.Candidate{s.cand}}.serve(t, up)
					if !res.Cut {
						t.Fatalf("%s: result %+v", s.host, res)
					}
					frames := sseFrames(w.Body.String())
					name := upstreamName(s.cand)
					got[i] = strings.ReplaceAll(frames[len(frames)-1], `\"`+name+`\"`, `\"PROVIDER\"`)
				}
				if got[0] != got[1] || !strings.Contains(got[0], `upstream_stream_incomplete"`) || !strings.Contains(got[0], `\"PROVIDER\"`) {
					t.Errorf("passthrough ended with\n%s\ntranslated with\n%s\nwant the same upstream_stream_incomplete event", got[0], got[1])
				}
			})
		}
	}
}

// brokenSSE is an event stream whose body fails after parts.
func brokenSSE(parts []string, err error) testkit.Reply {
	return testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Parts: parts, ReadErr: err}
}

// sseFrames splits an SSE body into its frames, without their blank line.
func sseFrames(body string) []string {
	return strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
}

// upstreamName is the name of the test provider serving c.
func upstreamName(c plan.Candidate) string { return translationProviders()[c.Provider].Name }

// TestTranslatedStreamUpstreamErrorEvent: an error event the upstream sends
// mid-stream reaches the client as its dialect's error frame, the stream
// ends cleanly, and the result carries the upstream's error for the log.
func TestTranslatedStreamUpstreamErrorEvent(t *testing.T) {
	body := `{"model":"public","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	overloaded := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	up := testkit.NewUpstream(map[string][]testkit.Reply{"ant.test": {testkit.SSE(append(append([]string(nil), antEvents[:3]...), overloaded)...)}})
	res, w := call{route: plan.RouteChatCompletions, body: body, cands: []plan.Candidate{toAnt}}.serve(t, up)
	if res.Status != 200 || res.Cut || !errors.Is(res.Err, translate.ErrUpstreamReported) ||
		!strings.Contains(res.Err.Error(), "Overloaded") {
		t.Fatalf("result %+v", res)
	}
	data, _ := sseData(t, w.Body.String())
	if last := data[len(data)-1]; !strings.HasPrefix(last, `{"error":`) || !strings.Contains(last, "Overloaded") {
		t.Errorf("last frame %s", last)
	}
}

// TestTranslatedStreamWithoutStreamUsage: a provider with stream_usage off
// is not sent stream_options; the client's stream still ends whole.
func TestTranslatedStreamWithoutStreamUsage(t *testing.T) {
	body := `{"model":"public","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	up := testkit.NewUpstream(map[string][]testkit.Reply{"oai-strict.test": {testkit.SSE(oaiChunks...)}})
	res, w := call{route: plan.RouteMessages, body: body, cands: []plan.Candidate{toOAIStrict}}.serve(t, up)
	if res.Status != 200 || res.Cut || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	if c := up.Calls("oai-strict.test")[0]; strings.Contains(c.Body, "stream_options") {
		t.Errorf("upstream body %s", c.Body)
	}
	if _, events := sseData(t, w.Body.String()); events[len(events)-1] != "message_stop" {
		t.Errorf("events %v", events)
	}
}
