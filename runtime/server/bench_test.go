package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// BenchmarkInference is the gateway's own per-request cost on the JSON
// path: checks, key lookup, body read and scan, plan lookup, the attempt
// loop against an in-memory upstream, relay, log line and metrics.
func BenchmarkInference(b *testing.B) {
	benchInference(b, newTestServer(b, okUpstream().Unrecorded()))
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

func benchInference(b *testing.B, s *Server) {
	body := []byte(`{"model":"gpt","messages":[{"role":"user","content":"Measure the gateway on this short prompt"}]}`)
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	req.Header.Set("Authorization", "Bearer k-default")
	req.Header.Set("Content-Type", "application/json")
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req.Body = readCloser{bytes.NewReader(body)}
		req.ContentLength = int64(len(body))
		clear(w.h)
		s.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
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
