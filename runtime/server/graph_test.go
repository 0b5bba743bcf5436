package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
)

// testGraph is a hand-built graph: an OpenAI provider serving "gpt" (chat)
// and "embed" (embeddings), an Anthropic one serving "claude", and a
// "narrow" profile that may use only "gpt".
func testGraph() *plan.Graph {
	b := testkit.NewGraph("sha256:test")
	oa := b.Provider(plan.Provider{Name: "oa", BaseURL: "http://oa.test/v1", Pool: -1, Auth: "bearer",
		Channels: []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
			Routes: []plan.Route{plan.RouteChatCompletions, plan.RouteEmbeddings}, Origin: "native", Preserves: plan.AllCaps}}})
	an := b.Provider(plan.Provider{Name: "an", BaseURL: "http://an.test/v1", Pool: -1, Auth: "x-api-key",
		Channels: []plan.Channel{{Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative,
			Routes: []plan.Route{plan.RouteMessages}, Origin: "native", Preserves: plan.AllCaps}}})
	native := func(p int, model string) int {
		return b.Plan(plan.Plan{NativeOnly: true, Listed: true}, []plan.Candidate{{Provider: p, Model: model + "-upstream",
			Tier: plan.TierNative, Preserves: plan.AllCaps, Origin: "native", Primary: true}}, nil)
	}
	gpt := plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt", Plan: native(oa, "gpt")}
	all := b.Table(gpt,
		plan.Entry{Route: plan.RouteEmbeddings, Model: "embed", Plan: native(oa, "embed")},
		plan.Entry{Route: plan.RouteMessages, Model: "claude", Plan: native(an, "claude")})
	b.Key("default", "k-default", b.Profile(plan.Profile{Name: "default", Table: all}))
	b.Key("narrow", "k-narrow", b.Profile(plan.Profile{Name: "narrow", Table: b.Table(gpt)}))
	return b.Build()
}

// okUpstream answers every request with a small JSON body.
func okUpstream() *testkit.Upstream {
	return testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {testkit.JSON(200, `{"ok":true}`)}})
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
		Logger:       slog.New(record.NewJSONHandler(io.Discard, nil)),
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
