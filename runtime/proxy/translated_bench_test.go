package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/dialect/anthropic"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

// benchCase is one way of serving a request: passthrough or a pair.
type benchCase struct {
	name   string
	route  plan.Route
	cand   plan.Candidate
	client []byte
	reply  testkit.Reply
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
	up := testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {c.reply}}).Unrecorded()
	p := &Proxy{Transport: up, Metrics: metrics.New()}
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

// jsonAnswer is a 200 JSON answer without a Content-Length, so the
// passthrough relay streams it as it would a chunked one.
func jsonAnswer(body []byte) testkit.Reply {
	return testkit.Reply{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Parts: []string{string(body)}}
}

// stream is a 200 event stream of head, mid n times, then tail.
func stream(head []string, mid string, tail []string, n int) testkit.Reply {
	return testkit.SSE(slices.Concat(head, slices.Repeat([]string{mid}, n), tail)...)
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
		{name: "passthrough", route: plan.RouteChatCompletions, cand: oaiSame, client: oaiReq, reply: jsonAnswer(oaiResp)},
		{name: "openai_anthropic", route: plan.RouteChatCompletions, cand: toAnt, client: oaiReq, reply: jsonAnswer(antResp)},
		{name: "anthropic_openai", route: plan.RouteMessages, cand: toOAI, client: antReq, reply: jsonAnswer(oaiResp)},
	}
	for i := range cases {
		b.Run(cases[i].name, func(b *testing.B) { cases[i].run(b, 0) })
	}
}

// BenchmarkTranslatedStream is one streamed answer of n text deltas. The
// per-chunk cost is the slope between n=10 and n=1000; allocs/op stays put
// across n because no path allocates per chunk.
func BenchmarkTranslatedStream(b *testing.B) {
	oai := func(s string) string { return "data: " + s + "\n\n" }
	ant := func(event, s string) string { return "event: " + event + "\ndata: " + s + "\n\n" }
	oaiHead := []string{oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`)}
	oaiMid := oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}],"usage":null}`)
	oaiTail := []string{
		oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`),
		oai(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`),
		"data: [DONE]\n\n",
	}
	antHead := []string{
		ant("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":9,"output_tokens":1}}}`),
		ant("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	antMid := ant("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}}`)
	antTail := []string{
		ant("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ant("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`),
		ant("message_stop", `{"type":"message_stop"}`),
	}
	respHead := []string{
		ant("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-x","output":[],"usage":null}}`),
		ant("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`),
		ant("response.content_part.added", `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`),
	}
	respMid := ant("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" word","logprobs":[]}`)
	respTail := []string{
		ant("response.content_part.done", `{"type":"response.content_part.done","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`),
		ant("response.output_item.done", `{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[]}}`),
		ant("response.completed", `{"type":"response.completed","sequence_number":6,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-x","output":[],"usage":{"input_tokens":9,"output_tokens":3,"total_tokens":12}}}`),
	}
	respClient := []byte(`{"model":"fast","stream":true,"max_output_tokens":256,"input":"hi"}`)
	oaiClient := []byte(`{"model":"fast","stream":true,"stream_options":{"include_usage":true},"max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`)
	antClient := []byte(`{"model":"fast","stream":true,"max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`)
	for _, n := range []int{10, 1000} {
		cases := []benchCase{
			{name: "passthrough", route: plan.RouteChatCompletions, cand: oaiSame, client: oaiClient,
				reply: stream(oaiHead, oaiMid, oaiTail, n)},
			{name: "openai_anthropic", route: plan.RouteChatCompletions, cand: toAnt, client: oaiClient,
				reply: stream(antHead, antMid, antTail, n)},
			{name: "anthropic_openai", route: plan.RouteMessages, cand: toOAI, client: antClient,
				reply: stream(oaiHead, oaiMid, oaiTail, n)},
			{name: "responses_anthropic", route: plan.RouteResponses, cand: toAntResp, client: respClient,
				reply: stream(antHead, antMid, antTail, n)},
			{name: "anthropic_responses", route: plan.RouteMessages, cand: toOAIResp, client: antClient,
				reply: stream(respHead, respMid, respTail, n)},
		}
		for i := range cases {
			b.Run(fmt.Sprintf("%s/chunks=%d", cases[i].name, n), func(b *testing.B) { cases[i].run(b, n) })
		}
	}
}
