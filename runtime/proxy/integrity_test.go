package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
)

// oaiStream is a chat stream answering "Hello", with the usage-only chunk
// include_usage adds.
var oaiStream = oaiChunks

// withoutUsageChunk is oaiStream as a client that did not ask gets it, as
// the upstream would have sent it unasked: no usage-only chunk, and no
// "usage":null on the others.
var withoutUsageChunk = strings.ReplaceAll(strings.Join(append(append([]string{}, oaiChunks[:4]...), oaiChunks[5:]...), ""), `,"usage":null`, "")

var (
	a0 = plan.Candidate{Provider: 0, Model: "a-model", Primary: true, Origin: "native"}
	b1 = plan.Candidate{Provider: 1, Model: "b-model", Origin: "native"}
)

// TestBrokenAnswersFailOver: an answer is known good before anything of it
// is sent, so a non-stream body that breaks, a body that is not one JSON
// document, a stream that opens with an error event, ends before its first
// event or breaks before it are failed attempts: retried, then failed over
// to the next provider, whose answer the client gets.
func TestBrokenAnswersFailOver(t *testing.T) {
	const whole = `{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	cut := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Parts: []string{whole[:20]}, ReadErr: errors.New("unexpected EOF")}
	notJSON := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Parts: []string{whole[:40]}}
	errorFirst := testkit.SSE(`data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n")
	emptyStream := testkit.SSE()
	breaksEarly := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Parts: []string{`data: {"id":"x",`}, ReadErr: errors.New("connection reset")}
	for name, bad := range map[string]testkit.Reply{
		"non-stream body cut": cut, "not a JSON document": notJSON, "stream opens with an error": errorFirst,
		"stream without events": emptyStream, "stream breaks before its first event": breaksEarly,
	} {
		t.Run(name, func(t *testing.T) {
			body := `{"model":"public","messages":[]}`
			if bad.Header.Get("Content-Type") == "text/event-stream" {
				body = `{"model":"public","stream":true,"messages":[]}`
			}
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": {bad}, "b.test": {testkit.JSON(200, whole)}})
			res, w := call{route: plan.RouteChatCompletions, body: body, cands: []plan.Candidate{a0, b1},
				providers: testProviders()}.serve(t, up)
			if w.Code != 200 || res.Provider != "b" || res.Cut || res.Err != nil {
				t.Fatalf("status %d by %q (cut %v, err %v): %s", w.Code, res.Provider, res.Cut, res.Err, w.Body)
			}
			if w.Body.String() != whole {
				t.Errorf("client got %q", w.Body)
			}
			if n := len(up.Calls("a.test")); n != 2 {
				t.Errorf("a called %d times, want 2 (a retry, then failover)", n)
			}
			if !res.Failover || w.Header().Get(record.HeaderFailover) != "true" || w.Header().Get(record.HeaderAttempt) != "3" ||
				w.Header().Get(record.HeaderModel) != "b-model" {
				t.Errorf("served headers %v", w.Header())
			}
			if res.Usage.TotalTokens != 5 || res.UsageFrom != meter.SourcePassthrough {
				t.Errorf("usage %+v from %v", res.Usage, res.UsageFrom)
			}
		})
	}
}

// TestBrokenAnswerWithNowhereToGo: the last candidate's broken answer is
// the gateway's own 502, never an empty reply or a truncated body.
func TestBrokenAnswerWithNowhereToGo(t *testing.T) {
	cut := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Parts: []string{`{"id":"c1","choi`}, ReadErr: errors.New("unexpected EOF")}
	up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {cut}})
	res, w := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{b1},
		providers: testProviders()}.serve(t, up)
	if w.Code != 502 || res.Code != dialect.CodeUpstreamInvalidResponse || !strings.Contains(w.Body.String(), "upstream_invalid_response") {
		t.Fatalf("status %d code %q: %s", w.Code, res.Code, w.Body)
	}
}

// TestStreamWithoutItsEnd: a passthrough stream that ends cleanly without
// its terminal event, or breaks, after the status was sent, ends for the
// client with an error event in its dialect, and is recorded and counted
// as a failure with the usage seen so far.
func TestStreamWithoutItsEnd(t *testing.T) {
	antStart := antEvents[:4]
	tests := []struct {
		name      string
		route     plan.Route
		body      string
		cand      plan.Candidate
		reply     testkit.Reply
		wantFrame string
		wantInput uint64
	}{
		{"chat ends without [DONE]", plan.RouteChatCompletions, `{"model":"gpt-x","stream":true,"messages":[]}`, oaiSame,
			testkit.SSE(oaiChunks[:5]...), `data: {"error":{"message":`, 9},
		{"chat breaks", plan.RouteChatCompletions, `{"model":"gpt-x","stream":true,"messages":[]}`, oaiSame,
			testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Parts: oaiChunks[:2],
				ReadErr: errors.New("connection reset")}, `"code":"upstream_stream_incomplete"`, 0},
		{"messages ends without message_stop", plan.RouteMessages, antClientBody, antSame,
			testkit.SSE(antStart...), "event: error\ndata: {\"type\":\"error\"", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			host := map[plan.Route]string{plan.RouteChatCompletions: "oai.test", plan.RouteMessages: "ant.test"}[tt.route]
			up := testkit.NewUpstream(map[string][]testkit.Reply{host: {tt.reply}})
			res, w := call{route: tt.route, body: tt.body, cands: []plan.Candidate{tt.cand}, metrics: m}.serve(t, up)
			if w.Code != 200 || !res.Cut || res.Err == nil {
				t.Fatalf("status %d cut %v err %v", w.Code, res.Cut, res.Err)
			}
			if !strings.Contains(w.Body.String(), tt.wantFrame) || !strings.HasSuffix(w.Body.String(), "\n\n") {
				t.Errorf("client stream does not end with the error event %q:\n%s", tt.wantFrame, w.Body)
			}
			if res.Usage.InputTokens != tt.wantInput {
				t.Errorf("usage so far %+v, want input %d", res.Usage, tt.wantInput)
			}
			if n := testkit.Counter(t, m.Registry(), "pistra_stream_failures_total", map[string]string{"reason": metrics.StreamIncomplete}); n != 1 {
				t.Errorf("stream failures counted %v", n)
			}
		})
	}
}

// TestUpstreamErrorInsideAStream: an error event after the stream was
// committed reaches the client as sent, and is a failure in the record and
// the counter, not a success.
func TestUpstreamErrorInsideAStream(t *testing.T) {
	m := metrics.New()
	errEvent := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	up := testkit.NewUpstream(map[string][]testkit.Reply{"ant.test": {testkit.SSE(append(append([]string{}, antEvents[:3]...), errEvent)...)}})
	res, w := call{route: plan.RouteMessages, body: antClientBody, cands: []plan.Candidate{antSame}, metrics: m}.serve(t, up)
	if w.Code != 200 || res.Err == nil || !strings.Contains(res.Err.Error(), "Overloaded") {
		t.Fatalf("status %d err %v", w.Code, res.Err)
	}
	if !strings.HasSuffix(w.Body.String(), errEvent) {
		t.Errorf("client stream %q", w.Body)
	}
	if n := testkit.Counter(t, m.Registry(), "pistra_stream_failures_total", map[string]string{"reason": metrics.StreamUpstreamError}); n != 1 {
		t.Errorf("counted %v", n)
	}
}

// TestClientLeavingOnTheErrorEvent: a client that hangs up as soon as it
// reads the upstream's error event (SDKs do) left after its answer: the
// record is the upstream's error, not a 499, natively and translated.
func TestClientLeavingOnTheErrorEvent(t *testing.T) {
	errEvent := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	for _, tt := range []struct {
		name  string
		route plan.Route
		body  string
		cand  plan.Candidate
	}{
		{"native", plan.RouteMessages, antClientBody, antSame},
		{"translated", plan.RouteChatCompletions, `{"model":"public","stream":true,"messages":[{"role":"user","content":"hi"}]}`, toAnt},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			up := testkit.NewUpstream(map[string][]testkit.Reply{"ant.test": {testkit.SSE(append(append([]string{}, antEvents[:3]...), errEvent)...)}})
			res, _ := call{route: tt.route, body: tt.body, cands: []plan.Candidate{tt.cand}, metrics: m, hangUpOn: "Overloaded"}.serve(t, up)
			if res.Status == record.StatusClientClosed || res.Err == nil || !strings.Contains(res.Err.Error(), "Overloaded") {
				t.Fatalf("status %d err %v, want the upstream's error", res.Status, res.Err)
			}
			if n := testkit.Counter(t, m.Registry(), "pistra_stream_failures_total", map[string]string{"reason": metrics.StreamUpstreamError}); n != 1 {
				t.Errorf("counted %v", n)
			}
		})
	}
}

// TestUsageAskedOnTheClientsBehalf: a chat stream whose client did not ask
// for usage is asked upstream, metered, and relayed without the usage-only
// chunk, byte for byte as the client would have had it; a client that
// asked gets its chunk; a provider with stream_usage off is not asked.
func TestUsageAskedOnTheClientsBehalf(t *testing.T) {
	tests := []struct {
		name, body string
		cand       plan.Candidate
		host       string
		wantAsked  bool
		want       string
	}{
		{"not asked: asked for, stripped", `{"model":"gpt-x","stream":true,"messages":[]}`, oaiSame, "oai.test", true, withoutUsageChunk},
		{"client asked: kept", `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, oaiSame, "oai.test", true,
			strings.Join(oaiStream, "")},
		{"stream_usage off: not asked", `{"model":"gpt-x","stream":true,"messages":[]}`, oaiStrictSame, "oai-strict.test", false,
			strings.Join(oaiStream, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, stride := range []int{1, 7, 1 << 20} {
				up := testkit.NewUpstream(map[string][]testkit.Reply{tt.host: {testkit.SSE(splitEvery(strings.Join(oaiStream, ""), stride)...)}})
				res, w := call{route: plan.RouteChatCompletions, body: tt.body, cands: []plan.Candidate{tt.cand}}.serve(t, up)
				if w.Code != 200 || res.Err != nil || res.Cut {
					t.Fatalf("stride %d: status %d err %v", stride, w.Code, res.Err)
				}
				if got := w.Body.String(); got != tt.want {
					t.Fatalf("stride %d: client got\n%s\nwant\n%s", stride, got, tt.want)
				}
				sent := up.Calls(tt.host)[0].Body
				if asked := strings.Contains(sent, `"include_usage":true`); asked != tt.wantAsked {
					t.Errorf("upstream body %s: asked %v, want %v", sent, asked, tt.wantAsked)
				}
				if res.Usage.InputTokens != 9 || res.Usage.OutputTokens != 3 || res.UsageFrom != meter.SourcePassthrough {
					t.Errorf("usage %+v from %v", res.Usage, res.UsageFrom)
				}
			}
		})
	}
}

// splitEvery cuts s into parts of n bytes, as an upstream's reads might.
func splitEvery(s string, n int) []string {
	var parts []string
	for len(s) > n {
		parts, s = append(parts, s[:n]), s[n:]
	}
	return append(parts, s)
}

var (
	antSame       = plan.Candidate{Provider: 0, Tier: plan.TierNative, Model: "claude-x", Origin: "native", Primary: true}
	oaiStrictSame = plan.Candidate{Provider: 3, Tier: plan.TierNative, Model: "gpt-x", Origin: "native", Primary: true}
)

// TestAnswersTheGatewayCannotReadPassUnchecked: an answer compressed
// unasked, or not declared JSON, is relayed as it is rather than failed as
// malformed; only what the gateway can read is held to being whole JSON.
func TestAnswersTheGatewayCannotReadPassUnchecked(t *testing.T) {
	for name, reply := range map[string]testkit.Reply{
		"gzip":       {Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}, Parts: []string{"\x1f\x8b\x08binary"}},
		"plain text": {Status: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Parts: []string{"hello"}},
	} {
		t.Run(name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {reply}})
			res, w := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{b1},
				providers: testProviders()}.serve(t, up)
			if w.Code != 200 || res.Err != nil || w.Body.String() != reply.Parts[0] || res.UsageFrom != meter.SourceNone {
				t.Fatalf("status %d err %v usage from %v: %q", w.Code, res.Err, res.UsageFrom, w.Body)
			}
		})
	}
}

// TestKeepalivesWithoutAnEventAreBounded: bytes that make no event
// (comments, keepalives) are held before the first event only up to a
// bound; past it the attempt failed, rather than holding the client, and
// memory, for ever.
func TestKeepalivesWithoutAnEventAreBounded(t *testing.T) {
	keepalive := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Parts: []string{strings.Repeat(": keepalive\n\n", 4096)}, Endless: true}
	up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {keepalive}})
	res, w := call{route: plan.RouteChatCompletions, body: `{"model":"public","stream":true,"messages":[]}`, cands: []plan.Candidate{b1},
		providers: testProviders()}.serve(t, up)
	if w.Code != 502 || res.Code != dialect.CodeUpstreamInvalidResponse || !strings.Contains(res.Err.Error(), "before the first event") {
		t.Fatalf("status %d code %q err %v", w.Code, res.Code, res.Err)
	}
}

// TestOpeningErrorThatBlamesTheRequest: an opening error event of a type
// that says the request itself is wrong is the answer, relayed as sent:
// another attempt would fail the same way.
func TestOpeningErrorThatBlamesTheRequest(t *testing.T) {
	ev := `data: {"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}` + "\n\n"
	up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": {testkit.SSE(ev)}, "b.test": {testkit.JSON(200, `{}`)}})
	res, w := call{route: plan.RouteChatCompletions, body: `{"model":"public","stream":true,"messages":[]}`, cands: []plan.Candidate{a0, b1},
		providers: testProviders()}.serve(t, up)
	if w.Code != 200 || w.Body.String() != ev || res.Provider != "a" || len(up.Calls("a.test")) != 1 || len(up.Calls("b.test")) != 0 {
		t.Fatalf("status %d by %q, a called %d, b %d: %q", w.Code, res.Provider, len(up.Calls("a.test")), len(up.Calls("b.test")), w.Body)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "context_length_exceeded") {
		t.Errorf("err %v", res.Err)
	}
}

// TestEdgeAnswers: an empty 2xx is relayed, not failed; an answer larger
// than the bound on answers read whole is relayed as it comes; chunks
// written "data:" without the space still lose the "usage":null asking
// added.
func TestEdgeAnswers(t *testing.T) {
	empty := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"0"}}}
	up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {empty}})
	res, w := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{b1},
		providers: testProviders()}.serve(t, up)
	if w.Code != 200 || res.Err != nil || w.Body.Len() != 0 {
		t.Errorf("empty answer: status %d err %v", w.Code, res.Err)
	}

	big := `{"id":"c1","choices":[],"pad":"` + strings.Repeat("x", 4096) + `"}`
	up = testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {testkit.JSON(200, big)}})
	res, w = call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{b1},
		providers: testProviders(), maxAnswer: 1024}.serve(t, up)
	if w.Code != 200 || res.Err != nil || w.Body.String() != big || res.UsageFrom != meter.SourceNone {
		t.Errorf("large answer: status %d err %v, %d bytes", w.Code, res.Err, w.Body.Len())
	}

	tight := strings.ReplaceAll(strings.Join(oaiStream, ""), "data: ", "data:")
	up = testkit.NewUpstream(map[string][]testkit.Reply{"oai.test": {testkit.SSE(tight)}})
	res, w = call{route: plan.RouteChatCompletions, body: `{"model":"gpt-x","stream":true,"messages":[]}`, cands: []plan.Candidate{oaiSame}}.serve(t, up)
	if want := strings.ReplaceAll(withoutUsageChunk, "data: ", "data:"); w.Body.String() != want || res.Err != nil {
		t.Errorf("data: without a space: got\n%s\nwant\n%s", w.Body, want)
	}
}

// TestClientLeavingAnUnheldBody: a client that leaves while an answer
// the gateway did not hold is relayed (compressed unasked, a stream
// included, or over the bound on answers held) is a 499, not a 200 whose
// upstream broke: the read failed because the client's leaving cancelled
// it, and there is no connection left to cut. A client gone before a held
// answer is written is a 499 too.
func TestClientLeavingAnUnheldBody(t *testing.T) {
	gzipStream := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}, "Content-Encoding": {"gzip"}},
		Parts: []string{"\x1f\x8b\x08first", "second"}, ReadErr: context.Canceled}
	large := testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Parts: []string{`{"id":"first`, strings.Repeat("x", 64), `"}`}, ReadErr: context.Canceled}
	for _, tt := range []struct {
		name      string
		reply     testkit.Reply
		stream    bool
		hangUpOn  string
		gone      bool
		maxAnswer int
	}{
		{"gzip stream", gzipStream, true, "first", false, 0},
		{"over the bound", large, false, "first", false, 16},
		{"whole answer, client gone", testkit.JSON(200, `{"id":"x"}`), false, "", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {tt.reply}})
			body := `{"model":"public","messages":[]}`
			if tt.stream {
				body = `{"model":"public","stream":true,"messages":[]}`
			}
			res, _ := call{route: plan.RouteChatCompletions, body: body, cands: []plan.Candidate{b1}, providers: testProviders(),
				hangUpOn: tt.hangUpOn, gone: tt.gone, maxAnswer: tt.maxAnswer}.serve(t, up)
			// Left mid-body, the connection is cut too, in case the client
			// only half-closed and is still reading.
			if wantCut := tt.hangUpOn != ""; res.Status != record.StatusClientClosed || res.Cut != wantCut || res.Err == nil {
				t.Fatalf("status %d cut %v err %v, want a 499, cut %v", res.Status, res.Cut, res.Err, wantCut)
			}
			if res.Level() != slog.LevelInfo {
				t.Errorf("a client leaving first is logged at %v", res.Level())
			}
		})
	}
}
