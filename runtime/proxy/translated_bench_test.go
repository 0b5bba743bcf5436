package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/dialect/anthropic"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

// replayBody hands out head, then mid n times, then tail, one frame per
// Read, without allocating.
type replayBody struct {
	head, tail [][]byte
	mid        []byte
	n, pos     int
}

func (b *replayBody) Read(p []byte) (int, error) {
	var frame []byte
	switch i := b.pos; {
	case i < len(b.head):
		frame = b.head[i]
	case i < len(b.head)+b.n:
		frame = b.mid
	case i < len(b.head)+b.n+len(b.tail):
		frame = b.tail[i-len(b.head)-b.n]
	default:
		return 0, io.EOF
	}
	b.pos++
	return copy(p, frame), nil
}

func (b *replayBody) Close() error { return nil }

// replayUpstream answers every request with the same body, reusing its
// response objects so a benchmark counts the gateway's allocations only.
type replayUpstream struct {
	body   replayBody
	header http.Header
	resp   http.Response
}

func (u *replayUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	consumeBody(r)
	u.body.pos = 0
	u.resp = http.Response{StatusCode: 200, Header: u.header, Body: &u.body, ContentLength: -1}
	return &u.resp, nil
}

// benchCase is one way of serving a request: passthrough or a pair.
type benchCase struct {
	name   string
	route  plan.Route
	cand   plan.Candidate
	client []byte
	up     replayUpstream
}

func (c *benchCase) run(b *testing.B, frames int) {
	ups, err := upstream.Resolve(&plan.Graph{Providers: translationProviders()}, func(string) (string, bool) { return "k", true })
	if err != nil {
		b.Fatal(err)
	}
	var d dialect.Writer = openai.Dialect{}
	if c.route == plan.RouteMessages {
		d = anthropic.Dialect{}
	}
	p := &Proxy{Transport: &c.up, Metrics: metrics.New()}
	cands := []plan.Candidate{c.cand}
	client := httptest.NewRequest("POST", "/v1/x", nil)
	w := &flushRecorder{h: http.Header{}}
	order := []int{0}
	var res record.Record // reused, as the server reuses its pooled exchanges
	b.ReportAllocs()
	for b.Loop() {
		raw := GetBuffer()
		*raw = append(*raw, c.client...)
		f, _ := dialect.FindModel(*raw)
		var body Body
		body.Reset(raw, f)
		clear(w.h)
		res = record.Record{}
		p.Serve(&Exchange{W: w, Client: client, RequestID: "req_bench", Route: c.route, Dialect: d,
			Body: &body, Upstreams: ups, Candidates: cands, Order: order, Record: &res})
		body.Release()
		if res.Status != 200 || res.Err != nil {
			b.Fatalf("status %d err %v", res.Status, res.Err)
		}
	}
	if frames > 0 {
		b.ReportMetric(float64(w.flushes)/float64(b.N), "flushes/op")
	}
}

func readTestdata(b *testing.B, path string) []byte {
	data, err := os.ReadFile(filepath.Join("..", "translate", "testdata", path, "in.json"))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func jsonUpstream(body []byte) replayUpstream {
	return replayUpstream{body: replayBody{head: [][]byte{body}}, header: http.Header{"Content-Type": {"application/json"}}}
}

// BenchmarkTranslatedRequest is one non-stream request with tools and
// history, through the proxy: passthrough against each translated pair,
// which adds the request translation and the response translation.
func BenchmarkTranslatedRequest(b *testing.B) {
	oaiReq := readTestdata(b, "openai_anthropic/request/tools_multiturn")
	antReq := readTestdata(b, "anthropic_openai/request/tools_results")
	oaiResp := readTestdata(b, "anthropic_openai/response/tool_calls")
	antResp := readTestdata(b, "openai_anthropic/response/tool_use_thinking")
	cases := []benchCase{
		{name: "passthrough", route: plan.RouteChatCompletions, cand: oaiSame, client: oaiReq, up: jsonUpstream(oaiResp)},
		{name: "openai_anthropic", route: plan.RouteChatCompletions, cand: toAnt, client: oaiReq, up: jsonUpstream(antResp)},
		{name: "anthropic_openai", route: plan.RouteMessages, cand: toOAI, client: antReq, up: jsonUpstream(oaiResp)},
	}
	for i := range cases {
		b.Run(cases[i].name, func(b *testing.B) { cases[i].run(b, 0) })
	}
}

// BenchmarkTranslatedStream is one streamed answer of n text deltas. The
// per-chunk cost is the slope between n=10 and n=1000; allocs/op stays put
// across n because no path allocates per chunk.
func BenchmarkTranslatedStream(b *testing.B) {
	sseHeader := http.Header{"Content-Type": {"text/event-stream"}}
	oai := func(s string) []byte { return []byte("data: " + s + "\n\n") }
	ant := func(event, s string) []byte { return []byte("event: " + event + "\ndata: " + s + "\n\n") }
	oaiHead := [][]byte{oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`)}
	oaiMid := oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}],"usage":null}`)
	oaiTail := [][]byte{
		oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`),
		oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`),
		[]byte("data: [DONE]\n\n"),
	}
	antHead := [][]byte{
		ant("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":9,"output_tokens":1}}}`),
		ant("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	antMid := ant("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}}`)
	antTail := [][]byte{
		ant("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ant("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`),
		ant("message_stop", `{"type":"message_stop"}`),
	}
	oaiClient := []byte(`{"model":"fast","stream":true,"stream_options":{"include_usage":true},"max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`)
	antClient := []byte(`{"model":"fast","stream":true,"max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`)
	for _, n := range []int{10, 1000} {
		cases := []benchCase{
			{name: "passthrough", route: plan.RouteChatCompletions, cand: oaiSame, client: oaiClient,
				up: replayUpstream{body: replayBody{head: oaiHead, mid: oaiMid, tail: oaiTail, n: n}, header: sseHeader}},
			{name: "openai_anthropic", route: plan.RouteChatCompletions, cand: toAnt, client: oaiClient,
				up: replayUpstream{body: replayBody{head: antHead, mid: antMid, tail: antTail, n: n}, header: sseHeader}},
			{name: "anthropic_openai", route: plan.RouteMessages, cand: toOAI, client: antClient,
				up: replayUpstream{body: replayBody{head: oaiHead, mid: oaiMid, tail: oaiTail, n: n}, header: sseHeader}},
		}
		for i := range cases {
			b.Run(fmt.Sprintf("%s/chunks=%d", cases[i].name, n), func(b *testing.B) { cases[i].run(b, n) })
		}
	}
}
