package upstream

import (
	"strings"
	"testing"

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
		{"unknown class", base(func(p *plan.Provider) { p.Retry.On = []plan.FailureClass{"4xx"} }), `retry: unknown failure class "4xx"`, "", "", ""},
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

func TestClasses(t *testing.T) {
	s, err := parseClasses([]plan.FailureClass{plan.Failure5xx, plan.FailureTimeout})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.FailureClasses {
		if want := c == plan.Failure5xx || c == plan.FailureTimeout; s.Has(c) != want {
			t.Errorf("Has(%q) = %v, want %v", c, s.Has(c), want)
		}
	}
	if s.Has("") || s.Has("canceled") {
		t.Errorf("a class no policy names is in the set")
	}
}
