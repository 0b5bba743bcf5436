package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pistra/pistra/internal/testkit/dnstest"
	"github.com/pistra/pistra/internal/testkit/fakepicker"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
	"github.com/pistra/pistra/runtime/pool/extproc"
	"github.com/pistra/pistra/runtime/tracing"
)

// BenchmarkInference is the gateway's own per-request cost on the JSON
// path: checks, key lookup, body read and scan, plan lookup, the attempt
// loop against an in-memory upstream, relay, log line and metrics.
func BenchmarkInference(b *testing.B) {
	benchInference(b, newTestServer(b, okUpstream().Unrecorded()))
}

// BenchmarkInferenceTraced is BenchmarkInference with tracing on at 100%
// sampling: a SERVER span and a CLIENT span per request, the upstream
// request carrying the attempt's traceparent, batched to an exporter that
// drops them (what the SDK costs, short of encoding and sending).
func BenchmarkInferenceTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	o := testOptions(testGraph(), okUpstream().Unrecorded())
	o.Tracer = tracing.New(tp)
	s, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	benchInference(b, s)
}

// BenchmarkInferenceWithSuspensions is BenchmarkInference on a gateway
// that keeps suspensions, none of them in force: what every request pays
// to learn that no key, provider or access rule is suspended.
func BenchmarkInferenceWithSuspensions(b *testing.B) {
	o := testOptions(testGraph(), okUpstream().Unrecorded())
	o.Suspensions = suspendedProviders{}
	s, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	benchInference(b, s)
}

// BenchmarkInferenceRuleSuspended is a request served only because the
// folded access rule that denies its one candidate is suspended: the
// plan's candidates are restored into the exchange's own buffers.
func BenchmarkInferenceRuleSuspended(b *testing.B) {
	o := testOptions(ruledGraph(b), okUpstream().Unrecorded())
	o.Suspensions = &ruleStore{rules: map[string]bool{"no-oa": true}}
	s, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	benchInference(b, s)
}

// BenchmarkInferencePooled is BenchmarkInference with the provider a pool
// whose pick (a fixed member, no DNS nor picker) costs nothing itself: the
// attempt loop's own cost of a pooled candidate (the pick's request, the
// member's URL, Pistra-Endpoint) over a plain one.
func BenchmarkInferencePooled(b *testing.B) {
	g := testGraph()
	g.Pools = []plan.Pool{{Name: "gpus", DNS: "gpus.test:8000", Scheme: "http"}}
	g.Providers[0].BaseURL, g.Providers[0].Pool = "", 0
	o := testOptions(g, okUpstream().Unrecorded())
	o.Pools = &onePick{member: "10.1.2.3:8000"}
	s, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	benchInference(b, s)
}

// BenchmarkInferencePoolRoundRobin is BenchmarkInference with the provider
// a pool of three members named by a real DNS server on loopback, the real
// pool.Set spreading requests over them in turn: the pooled request's cost
// over BenchmarkInference's plain one, in the same run.
func BenchmarkInferencePoolRoundRobin(b *testing.B) {
	benchInference(b, pooledServer(b, ""))
}

// BenchmarkInferencePoolPicker is BenchmarkInferencePoolRoundRobin with a
// real ext_proc picker on loopback (plaintext gRPC, the light reference
// picker's answers) naming the member: one Process stream per request.
// The picker runs in this process, so its own CPU and allocations are in
// the figures too.
func BenchmarkInferencePoolPicker(b *testing.B) {
	p := fakepicker.Start(b, fakepicker.Options{Light: true,
		Script: fakepicker.RoundRobin("127.0.0.2:8000", "127.0.0.3:8000", "127.0.0.4:8000")})
	benchInference(b, pooledServer(b, p.Addr()))
}

// pooledServer serves testGraph with its provider a pool of 127.0.0.2-.4
// on port 8000, picked by picker (an address, or "" for round robin).
func pooledServer(b *testing.B, picker string) *Server {
	dns := dnstest.Start(b)
	dns.Set(b, "gpus.test", time.Minute, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	g := testGraph()
	g.Pools = []plan.Pool{{Name: "gpus", DNS: "gpus.test:8000", Scheme: "http", Picker: picker,
		PickerPlaintext: picker != "", PickerFailure: plan.PickerFailClosed}}
	g.Providers[0].BaseURL, g.Providers[0].Pool = "", 0
	o := testOptions(g, okUpstream().Unrecorded())
	o.PoolOptions = pool.Options{Resolver: dns.Addr(), MinTTL: time.Second, MaxTTL: time.Minute, Picker: extproc.DialPool}
	s, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

func benchInference(b *testing.B, s *Server) {
	body := []byte(`{"model":"gpt","messages":[{"role":"user","content":"Measure the gateway on this short prompt"}]}`)
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	req.Header.Set("Authorization", "Bearer k-default")
	req.Header.Set("Content-Type", "application/json")
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		req.Body = readCloser{bytes.NewReader(body)}
		req.ContentLength = int64(len(body))
		clear(w.h)
		s.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	// CPU time rather than wall time: what a request costs the process,
	// its background goroutines (a span batcher's) included, and less
	// swayed than ns/op by a machine shared with other work.
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(s int)           { w.status = s }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
