package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

// sseEvent is one chat chunk; sseDone ends the stream. sseAsked and
// sseUsage are the same stream as an upstream sends it when asked for
// usage: "usage":null on every chunk, then the usage-only chunk.
const (
	sseEvent = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}` + "\n\n"
	sseAsked = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}],"usage":null}` + "\n\n"
	sseUsage = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1000,"total_tokens":1009}}` + "\n\n"
	sseDone  = "data: [DONE]\n\n"
)

// flushRecorder is a ResponseWriter that discards the body and counts flushes.
type flushRecorder struct {
	h       http.Header
	flushes int
}

func (w *flushRecorder) Header() http.Header         { return w.h }
func (w *flushRecorder) WriteHeader(int)             {}
func (w *flushRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (w *flushRecorder) Flush()                      { w.flushes++ }

// BenchmarkRelayStream runs the attempt loop and relay for one streamed
// request, with a provider timeout so every read of the body is timed as in
// production. allocs/op stays the same from 10 to 1000 events: the relay
// does not allocate per chunk. asked=true is the common case for a chat
// client that did not ask for usage: the gateway asks, strips the usage
// chunk and the "usage":null of every other.
func BenchmarkRelayStream(b *testing.B) {
	for _, asked := range []bool{false, true} {
		for _, n := range []int{10, 1000} {
			b.Run(fmt.Sprintf("asked=%v/events=%d", asked, n), func(b *testing.B) { benchRelayStream(b, n, asked) })
		}
	}
}

func benchRelayStream(b *testing.B, n int, asked bool) {
	// n events, one per Read, as a chunked upstream sends them, then
	// the terminal event without which the relay reports the stream cut.
	chunks := slices.Repeat([]string{sseEvent}, n)
	if asked {
		chunks = append(slices.Repeat([]string{sseAsked}, n), sseUsage)
	}
	events := testkit.SSE(append(chunks, sseDone)...)
	up := testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {events}}).Unrecorded()
	provs := testProviders()[:1]
	provs[0].TimeoutMS = 30_000
	provs[0].StreamUsage = asked
	ups, err := upstream.Resolve(&plan.Graph{Providers: provs}, func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	p := &Proxy{Transport: up, Metrics: metrics.New()}
	cands := []plan.Candidate{{Provider: 0, Model: "up-model", Primary: true, Origin: "native"}}
	client := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	w := &flushRecorder{h: http.Header{}}
	order := []int{0}
	var res record.Record // reused, as the server reuses its pooled exchanges
	b.ReportAllocs()
	b.SetBytes(int64(n*len(sseEvent) + len(sseDone)))
	for b.Loop() {
		raw := GetBuffer()
		*raw = append(*raw, `{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`...)
		h, _ := dialect.ReadHead(*raw)
		var body Body
		body.Reset(raw, h.Model)
		body.SetStream(h.Stream)
		clear(w.h)
		res = record.Record{}
		p.Serve(&Exchange{W: w, Client: client, RequestID: "req_bench", Route: plan.RouteChatCompletions, Dialect: openai.Dialect{},
			Body: &body, Upstreams: ups, Candidates: cands, Order: order, Record: &res})
		body.Release()
		if res.Status != 200 || res.Err != nil {
			b.Fatalf("status %d err %v", res.Status, res.Err)
		}
	}
	b.ReportMetric(float64(w.flushes)/float64(b.N), "flushes/op")
}
