package proxy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

func TestResolve(t *testing.T) {
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"KEY": "s3cret", "EMPTY": ""}[k]
		return v, ok
	}
	chat := []plan.Route{plan.RouteChatCompletions}
	base := func(mod func(p *plan.Provider)) plan.Provider {
		p := plan.Provider{Name: "p", BaseURL: "https://api.example.com/v1/", Pool: -1, CredentialEnv: "KEY",
			Channels: []plan.Channel{{Name: "c", Routes: chat}}}
		mod(&p)
		return p
	}
	tests := []struct {
		name             string
		p                plan.Provider
		err              string
		authKey, authVal string
		url              string
	}{
		{"bearer", base(func(p *plan.Provider) { p.Auth = "bearer" }), "", "Authorization", "Bearer s3cret",
			"https://api.example.com/v1/chat/completions"},
		{"x-api-key", base(func(p *plan.Provider) { p.Auth = "x-api-key" }), "", "X-Api-Key", "s3cret", ""},
		{"azure api-key and query", base(func(p *plan.Provider) {
			p.Auth = "api-key"
			p.Query = []plan.Header{{Name: "api-version", Value: "2025-01-01"}}
		}), "", "Api-Key", "s3cret", "https://api.example.com/v1/chat/completions?api-version=2025-01-01"},
		{"no credential", base(func(p *plan.Provider) { p.CredentialEnv = "" }), "", "", "", ""},
		{"channel base URL wins", base(func(p *plan.Provider) { p.Channels[0].BaseURL = "http://compat.example.com/v1" }),
			"", "Authorization", "Bearer s3cret", "http://compat.example.com/v1/chat/completions"},
		{"unset variable", base(func(p *plan.Provider) { p.CredentialEnv = "MISSING" }), `provider "p": credential variable MISSING is not set`, "", "", ""},
		{"empty variable", base(func(p *plan.Provider) { p.CredentialEnv = "EMPTY" }), "EMPTY is not set", "", "", ""},
		{"unknown auth", base(func(p *plan.Provider) { p.Auth = "basic" }), `unknown auth scheme "basic"`, "", "", ""},
		{"unknown class", base(func(p *plan.Provider) { p.Retry.On = []string{"4xx"} }), `retry: unknown failure class "4xx"`, "", "", ""},
		{"relative URL", base(func(p *plan.Provider) { p.BaseURL = "api.example.com/v1" }), "not an absolute http(s) URL", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ups, err := Resolve(&plan.Graph{Providers: []plan.Provider{tt.p}}, env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := ups[0]
			if u.authKey != tt.authKey || (tt.authVal != "" && u.authValue[0] != tt.authVal) {
				t.Errorf("auth %s: %v", u.authKey, u.authValue)
			}
			if tt.url != "" {
				if got := u.URL(&plan.Candidate{Channel: 0}, plan.RouteChatCompletions); got == nil || got.String() != tt.url {
					t.Errorf("url %v, want %s", got, tt.url)
				}
			}
			if u.URL(&plan.Candidate{Channel: 0}, plan.RouteEmbeddings) != nil {
				t.Errorf("a route the channel does not serve has a URL")
			}
		})
	}
}

func TestCopyClientHeaders(t *testing.T) {
	client := http.Header{
		"Authorization":       {"Bearer client-key"},
		"X-Api-Key":           {"client-key"},
		"Connection":          {"keep-alive, x-stainless-hop"},
		"X-Stainless-Hop":     {"1"},
		"X-Stainless-Os":      {"linux"},
		"Anthropic-Beta":      {"a,b"},
		"Proxy-Authorization": {"Basic x"},
		"Te":                  {"trailers"},
		"Cookie":              {"c=1"},
	}
	got := http.Header{}
	copyClientHeaders(got, client)
	want := http.Header{"X-Stainless-Os": {"linux"}, "Anthropic-Beta": {"a,b"}}
	if len(got) != len(want) || got.Get("X-Stainless-Os") != "linux" || got.Get("Anthropic-Beta") != "a,b" {
		t.Fatalf("forwarded %v, want %v", got, want)
	}
}

func TestBodyRecyclesOnlyFinishedBuffers(t *testing.T) {
	raw := GetBuffer()
	*raw = append(*raw, `{"model":"pub","x":1}`...)
	f, _ := dialect.FindModel(*raw)
	var b Body
	b.Reset(raw, f)
	if got := string(b.forModel("pub")); got != `{"model":"pub","x":1}` {
		t.Fatalf("same model: %s", got)
	}
	first := b.forModel("up-1")
	req, err := http.NewRequestWithContext(b.traced(context.Background()), http.MethodPost, "http://up.test/v1/x", b.reader(first))
	if err != nil {
		t.Fatal(err)
	}
	// A write in progress pins the copy: a second model gets a fresh buffer.
	second := b.forModel("up-2")
	if string(first) != `{"model":"up-1","x":1}` || string(second) != `{"model":"up-2","x":1}` {
		t.Fatalf("copies %s / %s", first, second)
	}
	w := b.writes
	b.Release()
	if b.raw != nil || w.pending.Load() != 1 {
		t.Fatalf("release with a write in progress")
	}
	// The transport writes the body only now, then reports it written.
	up := testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {testkit.JSON(200, `{}`)}})
	if _, err := up.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if got := up.Calls("up.test")[0].Body; got != string(first) {
		t.Fatalf("the upstream was sent %s", got)
	}
	if w.pending.Load() != 0 {
		t.Fatalf("pending %d", w.pending.Load())
	}
}
