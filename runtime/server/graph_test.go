package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

func keyHash(k string) string {
	d := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(d[:])
}

// testGraph is a hand-built graph: an OpenAI provider serving "gpt" (chat)
// and "embed" (embeddings), an Anthropic one serving "claude", and a
// "narrow" profile that may use only "gpt".
func testGraph() *plan.Graph {
	openaiCh := []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
		Routes: []plan.Route{plan.RouteChatCompletions, plan.RouteEmbeddings}, Origin: "native", Preserves: plan.AllCaps}}
	anthropicCh := []plan.Channel{{Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative,
		Routes: []plan.Route{plan.RouteMessages}, Origin: "native", Preserves: plan.AllCaps}}
	cand := func(p int, model string) []plan.Candidate {
		return []plan.Candidate{{Provider: p, Model: model + "-upstream", Tier: plan.TierNative,
			Preserves: plan.AllCaps, Origin: "native", Primary: true}}
	}
	return &plan.Graph{
		SourceHash:     "sha256:test",
		OnFidelityLoss: "reject",
		Providers: []plan.Provider{
			{Name: "oa", BaseURL: "http://oa.test/v1", Pool: -1, Auth: "bearer", Channels: openaiCh},
			{Name: "an", BaseURL: "http://an.test/v1", Pool: -1, Auth: "x-api-key", Channels: anthropicCh},
		},
		Profiles: []plan.Profile{{Name: "default", Table: 0}, {Name: "narrow", Table: 1}},
		Keys: []plan.Key{
			{Name: "default", Hash: keyHash("k-default"), Profile: 0},
			{Name: "narrow", Hash: keyHash("k-narrow"), Profile: 1},
		},
		CandidateLists: [][]plan.Candidate{
			cand(0, "gpt"), cand(0, "embed"), cand(1, "claude"),
		},
		SkipLists: [][]plan.Skip{{}},
		Plans: []plan.Plan{
			{Candidates: 0, NativeOnly: true, Listed: true},
			{Candidates: 1, NativeOnly: true, Listed: true},
			{Candidates: 2, NativeOnly: true, Listed: true},
		},
		Tables: []plan.Table{
			{Entries: []plan.Entry{
				{Route: plan.RouteChatCompletions, Model: "gpt", Plan: 0},
				{Route: plan.RouteEmbeddings, Model: "embed", Plan: 1},
				{Route: plan.RouteMessages, Model: "claude", Plan: 2},
			}},
			{Entries: []plan.Entry{{Route: plan.RouteChatCompletions, Model: "gpt", Plan: 0}}},
		},
		Names: []string{"claude", "embed", "gpt"},
	}
}

// okUpstream answers every request with a small JSON body.
type okUpstream struct{ calls atomic.Int64 }

func (u *okUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if t := httptrace.ContextClientTrace(r.Context()); t != nil && t.WroteRequest != nil {
		t.WroteRequest(httptrace.WroteRequestInfo{}) // as net/http's transport does
	}
	u.calls.Add(1)
	const body = `{"ok":true}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

func newTestServer(t testing.TB, up http.RoundTripper) *Server {
	t.Helper()
	return newTestServerWith(t, testGraph(), up)
}

func newTestServerWith(t testing.TB, g *plan.Graph, up http.RoundTripper) *Server {
	t.Helper()
	s, err := New(testOptions(g, up))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testOptions are what every server test starts from: graph g, upstream
// up, no credentials, logs discarded.
func testOptions(g *plan.Graph, up http.RoundTripper) Options {
	return Options{
		AdminToken:   "t",
		MaxBodyBytes: 4 << 10,
		Load:         func() (*plan.Graph, string, error) { return g, "test", nil },
		LookupEnv:    func(string) (string, bool) { return "", false },
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Upstream:     up,
	}
}

// startOnLoopback serves o on random loopback ports until the test ends,
// for tests that need real connections (deadlines, socket buffers).
func startOnLoopback(t testing.TB, o Options) *Server {
	t.Helper()
	o.PublicAddr, o.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}
