package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/plan"
)

// BenchmarkInference is the gateway's own per-request cost on the JSON
// path: checks, key lookup, body read and scan, plan lookup, the attempt
// loop against an in-memory upstream, relay, log line and metrics.
func BenchmarkInference(b *testing.B) {
	s := newTestServer(b, okUpstream().Unrecorded())
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

// BenchmarkCapsUsed is selection's capability step on a 1 MiB chat body
// that uses strict tools: a native-only plan never reads it (the cost is
// flat, whatever the body), a plan with a compat channel reads it once.
func BenchmarkCapsUsed(b *testing.B) {
	text := strings.Repeat(`a long conversation, with \"quoted\" words; `, (1<<20)/46)
	payload := []byte(`{"model":"m","messages":[{"role":"user","content":"` + text + `"}],` +
		`"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object"}}}]}`)
	native := plan.Candidate{Tier: plan.TierNative, Preserves: plan.AllCaps}
	compat := plan.Candidate{Tier: plan.TierProviderCompat}
	for _, bc := range []struct {
		name  string
		plan  plan.Plan
		cands []plan.Candidate
		want  plan.CapSet
	}{
		{"native_only", plan.Plan{NativeOnly: true}, []plan.Candidate{native}, 0},
		{"with_compat", plan.Plan{}, []plan.Candidate{compat, native}, plan.Of(plan.CapStrictTools)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var r caps.Reader
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(plan.RouteChatCompletions, payload)
				if used, _ := capsUsed(&bc.plan, bc.cands, plan.RouteChatCompletions, &r); used != bc.want {
					b.Fatalf("used %v, want %v", used, bc.want)
				}
			}
		})
	}
}
