package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

var sseEvent = []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}` + "\n\n")

// eventBody hands out one SSE event per Read, as a chunked upstream does.
type eventBody struct{ left int }

func (b *eventBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	b.left--
	return copy(p, sseEvent), nil
}

func (b *eventBody) Close() error { return nil }

// streamUpstream answers every request with an event stream of n events,
// reusing its response objects so the benchmark counts the gateway's
// allocations, not the fake's.
type streamUpstream struct {
	n    int
	body eventBody
	resp http.Response
}

func (s *streamUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	consumeBody(r)
	s.body.left = s.n
	s.resp = http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &s.body, ContentLength: -1}
	return &s.resp, nil
}

// consumeBody reads and closes a request body and reports the write done,
// as net/http's transport does.
func consumeBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if t := httptrace.ContextClientTrace(r.Context()); t != nil && t.WroteRequest != nil {
		t.WroteRequest(httptrace.WroteRequestInfo{})
	}
	return b
}

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
// does not allocate per chunk.
func BenchmarkRelayStream(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			up := &streamUpstream{n: n}
			provs := testProviders()[:1]
			provs[0].TimeoutMS = 30_000
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
			b.SetBytes(int64(n * len(sseEvent)))
			for b.Loop() {
				raw := GetBuffer()
				*raw = append(*raw, `{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`...)
				f, _ := dialect.FindModel(*raw)
				var body Body
				body.Reset(raw, f)
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
		})
	}
}
