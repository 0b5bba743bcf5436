package upstream

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

func TestResolve(t *testing.T) {
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"KEY": "s3cret", "OTHER": "other-s3cret", "EMPTY": ""}[k]
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
		{"unset variable", base(func(p *plan.Provider) { p.CredentialEnv = "MISSING" }), `credential variables not set: MISSING (provider "p")`, "", "", ""},
		{"empty variable", base(func(p *plan.Provider) { p.CredentialEnv = "EMPTY" }), `not set: EMPTY (provider "p")`, "", "", ""},
		{"openai channel defaults to bearer", base(func(p *plan.Provider) {}), "", "Authorization", "Bearer s3cret", ""},
		{"anthropic channel defaults to x-api-key", base(func(p *plan.Provider) {
			p.Channels[0].Dialect, p.Channels[0].Routes = plan.DialectAnthropic, []plan.Route{plan.RouteMessages}
		}), "", "X-Api-Key", "s3cret", ""},
		{"channel auth wins over the provider's", base(func(p *plan.Provider) {
			p.Auth, p.Channels[0].Auth = plan.AuthXAPIKey, plan.AuthAPIKey
		}), "", "Api-Key", "s3cret", ""},
		{"channel credential_env wins over the provider's", base(func(p *plan.Provider) {
			p.CredentialEnv, p.Channels[0].CredentialEnv = "MISSING", "OTHER"
		}), "", "Authorization", "Bearer other-s3cret", ""},
		{"channel query over the provider's", base(func(p *plan.Provider) {
			p.Query = []plan.Header{{Name: "api-version", Value: "old"}, {Name: "a", Value: "1"}}
			p.Channels[0].Query = []plan.Header{{Name: "api-version", Value: "new"}}
		}), "", "Authorization", "Bearer s3cret", "https://api.example.com/v1/chat/completions?a=1&api-version=new"},
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
			if k, v := u.Channel(&plan.Candidate{Channel: 0}).Credential(); k != tt.authKey || (tt.authVal != "" && v[0] != tt.authVal) {
				t.Errorf("auth %s: %v", k, v)
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

// anthropicWithCompat is an Anthropic provider with its OpenAI-compatible
// channel, as the tester's failover target had it.
func anthropicWithCompat() plan.Provider {
	return plan.Provider{
		Name: "anthropic", BaseURL: "https://api.anthropic.example/v1", Pool: -1, CredentialEnv: "KEY",
		Headers: []plan.Header{
			{Name: "anthropic-version", Value: "2023-06-01"}, {Name: "anthropic-beta", Value: "b1"},
			{Name: "OpenAI-Organization", Value: "org-1"}, {Name: "x-team", Value: "ml"},
		},
		Channels: []plan.Channel{
			{Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative, Routes: []plan.Route{plan.RouteMessages}},
			{Name: "compat", Dialect: plan.DialectOpenAI, Tier: plan.TierProviderCompat, Routes: []plan.Route{plan.RouteChatCompletions},
				Headers: []plan.Header{{Name: "X-Team", Value: "compat"}, {Name: "anthropic-workspace-id", Value: "w1"}}},
		},
	}
}

// TestChannelsFollowTheirDialect: each channel of one provider presents the
// credential its own dialect expects and carries only the static headers
// meant for its dialect, the channel's own over the provider's.
func TestChannelsFollowTheirDialect(t *testing.T) {
	ups, err := Resolve(&plan.Graph{Providers: []plan.Provider{anthropicWithCompat()}}, func(string) (string, bool) { return "s3cret", true })
	if err != nil {
		t.Fatal(err)
	}
	u := &ups[0]
	tests := []struct {
		channel int
		auth    []string
		headers map[string]string
		version string
	}{
		{0, []string{"X-Api-Key", "s3cret"},
			map[string]string{"Anthropic-Version": "2023-06-01", "Anthropic-Beta": "b1", "X-Team": "ml"}, "2023-06-01"},
		{1, []string{"Authorization", "Bearer s3cret"},
			map[string]string{"Openai-Organization": "org-1", "X-Team": "compat", "Anthropic-Workspace-Id": "w1"}, ""},
	}
	for _, tt := range tests {
		c := &plan.Candidate{Channel: tt.channel, Model: "m"}
		ch := u.Channel(c)
		if k, v := ch.Credential(); k != tt.auth[0] || len(v) != 1 || v[0] != tt.auth[1] {
			t.Errorf("channel %d credential %s: %v, want %v", tt.channel, k, v, tt.auth)
		}
		got := map[string]string{}
		for _, h := range ch.StaticHeaders() {
			got[h.Name] = h.Value
		}
		if !maps.Equal(got, tt.headers) {
			t.Errorf("channel %d headers %v, want %v", tt.channel, got, tt.headers)
		}
		if v := u.Target(c).AnthropicVersion; v != tt.version {
			t.Errorf("channel %d translation writes for anthropic-version %q, want %q", tt.channel, v, tt.version)
		}
	}
}

// TestMissingCredentialsListedAtOnce: every unset variable of every
// provider and channel is in the one error, each once.
func TestMissingCredentialsListedAtOnce(t *testing.T) {
	a := anthropicWithCompat()
	a.Channels[1].CredentialEnv = "COMPAT_KEY"
	b := plan.Provider{Name: "b", BaseURL: "https://b.example/v1", Pool: -1, CredentialEnv: "B_KEY",
		Channels: []plan.Channel{
			{Name: "one", Dialect: plan.DialectOpenAI, Routes: []plan.Route{plan.RouteChatCompletions}},
			{Name: "two", Dialect: plan.DialectOpenAI, Routes: []plan.Route{plan.RouteEmbeddings}},
		}}
	none := plan.Provider{Name: "mtls", BaseURL: "https://pool.example/v1", Pool: -1,
		Channels: []plan.Channel{{Name: "c", Dialect: plan.DialectOpenAI, Routes: []plan.Route{plan.RouteChatCompletions}}}}
	_, err := Resolve(&plan.Graph{Providers: []plan.Provider{a, b, none}}, func(string) (string, bool) { return "", false })
	want := `credential variables not set: KEY (provider "anthropic"), COMPAT_KEY (provider "anthropic", channel "compat"), B_KEY (provider "b")`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// TestTLSFiles: a provider's TLS files are read at resolve time, and a
// file that is missing or holds no usable PEM fails the snapshot naming the
// provider and the file.
func TestTLSFiles(t *testing.T) {
	pki := testkit.NewPKI(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tls  plan.TLS
		err  string
	}{
		{"ca and client certificate", plan.TLS{CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey, ServerName: "pool.internal"}, ""},
		{"missing ca file", plan.TLS{CAFile: "/nonexistent/ca.pem"}, `provider "mtls": tls ca_file: open /nonexistent/ca.pem`},
		{"ca file without PEM", plan.TLS{CAFile: notPEM}, `provider "mtls": tls ca_file: ` + notPEM + `: no PEM certificate in it`},
		{"key of another certificate", plan.TLS{CertFile: pki.ClientCert, KeyFile: pki.ServerKey},
			`provider "mtls": tls cert_file ` + pki.ClientCert + `, key_file ` + pki.ServerKey + `: tls: private key does not match public key`},
		{"certificate without key", plan.TLS{CertFile: pki.ClientCert}, "cert_file and key_file go together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan.Provider{Name: "mtls", BaseURL: "https://127.0.0.1:1/v1", Pool: -1, TLS: &tt.tls,
				Channels: []plan.Channel{{Name: "c", Dialect: plan.DialectOpenAI, Routes: []plan.Route{plan.RouteChatCompletions}}}}
			ups, err := Resolve(&plan.Graph{Providers: []plan.Provider{p}}, func(string) (string, bool) { return "", false })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := ups[0].TLS
			if cfg == nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.ServerName != "pool.internal" {
				t.Fatalf("tls config %+v", cfg)
			}
			if k, _ := ups[0].Channel(&plan.Candidate{}).Credential(); k != "" {
				t.Errorf("a provider without credential_env presents %s", k)
			}
		})
	}
	plain, err := Resolve(&plan.Graph{Providers: []plan.Provider{anthropicWithCompat()}}, func(string) (string, bool) { return "k", true })
	if err != nil || plain[0].TLS != nil {
		t.Errorf("a provider without tls options has a TLS config of its own (%v)", err)
	}
}

// TestPoolMemberURLs: a pool-backed provider's channels are templates on
// the pool's scheme, with the route below /v1 and the static query, that
// take the picked member as their host; a channel with a base URL of its
// own is not pooled, and no member is among the fixed hosts.
func TestPoolMemberURLs(t *testing.T) {
	routes := []plan.Route{plan.RouteChatCompletions, plan.RouteMessages}
	g := &plan.Graph{
		Pools: []plan.Pool{{Name: "gpus", DNS: "vllm.test:8000", Scheme: "https"}},
		Providers: []plan.Provider{{Name: "vllm", Pool: 0, Query: []plan.Header{{Name: "v", Value: "1"}}, Channels: []plan.Channel{
			{Name: "native", Dialect: plan.DialectOpenAI, Routes: routes},
			{Name: "gateway", Dialect: plan.DialectOpenAI, BaseURL: "http://gateway.test/v1", Routes: routes},
		}}},
	}
	ups, err := Resolve(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	up := &ups[0]
	pooled, fixed := &plan.Candidate{Channel: 0}, &plan.Candidate{Channel: 1}
	if !up.Pooled(pooled) || up.Pooled(fixed) {
		t.Fatalf("pooled: %v %v", up.Pooled(pooled), up.Pooled(fixed))
	}
	if u := up.URL(pooled, plan.RouteChatCompletions); u == nil || u.Host != "" || u.String() != "https:///v1/chat/completions?v=1" {
		t.Errorf("template %v", u)
	}
	for _, tt := range []struct {
		c        *plan.Candidate
		route    plan.Route
		endpoint string
		want     string
	}{
		{pooled, plan.RouteChatCompletions, "10.0.0.7:8000", "https://10.0.0.7:8000/v1/chat/completions?v=1"},
		{pooled, plan.RouteMessages, "[fd00::7]:8000", "https://[fd00::7]:8000/v1/messages?v=1"},
	} {
		if got := up.MemberURL(tt.c, tt.route, tt.endpoint); got == nil || got.String() != tt.want {
			t.Errorf("%s on %s: %v, want %s", tt.route, tt.endpoint, got, tt.want)
		}
	}
	if got := up.MemberURL(pooled, plan.RouteEmbeddings, "10.0.0.7:8000"); got != nil {
		t.Errorf("a route the channel does not serve: %v", got)
	}
	if tmpl := up.URL(pooled, plan.RouteChatCompletions); tmpl.Host != "" {
		t.Errorf("MemberURL wrote into the template: %v", tmpl)
	}
	set := map[string]bool{}
	up.Hosts(set)
	if !maps.Equal(set, map[string]bool{"gateway.test": true}) {
		t.Errorf("hosts %v", set)
	}
}
