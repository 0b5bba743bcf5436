package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/dnstest"
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
	"github.com/pistra/pistra/runtime/suspend"
)

func decodePreflight(t *testing.T, b []byte) testkit.Preflight {
	t.Helper()
	var v testkit.Preflight
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("preflight answer %q: %v", b, err)
	}
	return v
}

// TestPreflightAnswers: the answer names what would serve and what was
// passed over, performs nothing upstream and counts no downgrade.
func TestPreflightAnswers(t *testing.T) {
	tests := []struct {
		name, key, model, body string
		serve, lost, passed    string
		lossy, read            bool
	}{
		{"strict skips the compat channel", "k-default", "tools", strictBody, "oa", "", "vendor", false, true},
		{"plain stays on it", "k-default", "tools", plainBody, "vendor", "", "", false, true},
		{"allow serves lossy", "k-lenient", "compat", strictBody, "vendor", "strict_tools", "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := okUpstream()
			s, _ := fidelityServer(t)
			s.proxy.Transport = up
			rec := s.do(publicRequest{"POST", "/v1/preflight", body(tt.body, tt.model), map[string]string{"Authorization": "Bearer " + tt.key}})
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			v := decodePreflight(t, rec.Body.Bytes())
			var passed []string
			for _, c := range v.PassedOver {
				passed = append(passed, c.Provider)
			}
			if v.Performed || !strings.Contains(v.Note, "no upstream call") || v.Route != "chat_completions" ||
				v.Serve.Provider != tt.serve || strings.Join(v.Serve.Lost, ",") != tt.lost || v.Lossy != tt.lossy ||
				strings.Join(passed, ",") != tt.passed || v.Capabilities.Read != tt.read || v.AttemptOrder[0].Provider != v.Serve.Provider {
				t.Errorf("answer %s", rec.Body)
			}
			if up.Count() != 0 {
				t.Errorf("preflight made %d upstream calls", up.Count())
			}
			for _, action := range []string{"skipped", "allowed", "rejected"} {
				if n := downgrades(t, s, "vendor", "openai-compat", "strict_tools", action); n != 0 {
					t.Errorf("preflight counted %v %s", n, action)
				}
			}
		})
	}
}

// TestPreflightRefusesLikeTheRequest: whatever the real request would be
// refused with, preflight answers byte for byte the same.
func TestPreflightRefusesLikeTheRequest(t *testing.T) {
	s, _ := fidelityServer(t)
	bearer := map[string]string{"Authorization": "Bearer k-default"}
	for _, tc := range []struct{ name, body string }{
		{"fidelity", body(strictBody, "compat")},
		{"unknown model", body(plainBody, "nope")},
		{"no model", `{"messages":[]}`},
		{"not JSON", `{"model":`},
	} {
		real := s.do(publicRequest{"POST", "/v1/chat/completions", tc.body, bearer})
		pre := s.do(publicRequest{"POST", "/v1/preflight?route=chat_completions", tc.body, bearer})
		if real.Code < 400 || pre.Code != real.Code || pre.Body.String() != real.Body.String() {
			t.Errorf("%s: request %d %s\npreflight %d %s", tc.name, real.Code, real.Body, pre.Code, pre.Body)
		}
	}
}

// TestPreflightRoute: ?route= picks the route, anthropic-version makes
// messages the default, and a bad route or caller is refused in the
// caller's dialect.
func TestPreflightRoute(t *testing.T) {
	s, _ := fidelityServer(t)
	anth := map[string]string{"X-Api-Key": "k-default", "Anthropic-Version": "2023-06-01"}
	bearer := map[string]string{"Authorization": "Bearer k-default"}
	tests := []struct {
		name, path string
		header     map[string]string
		status     int
		code       string
		anthropic  bool
	}{
		{"default route", "/v1/preflight", bearer, 200, "", false},
		{"anthropic caller defaults to messages", "/v1/preflight", anth, 404, "model_not_on_route", true},
		{"messages needs anthropic-version", "/v1/preflight?route=messages", bearer, 400, "missing_anthropic_version", true},
		{"unknown route", "/v1/preflight?route=chat", bearer, 400, "unknown_route", false},
		{"no key", "/v1/preflight", nil, 401, "missing_api_key", false},
	}
	for _, tt := range tests {
		rec := s.do(publicRequest{"POST", tt.path, body(plainBody, "tools"), tt.header})
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d: %s", tt.name, rec.Code, tt.status, rec.Body)
			continue
		}
		if tt.code != "" {
			if code, a := errorCode(t, rec.Body.Bytes()); code != tt.code || a != tt.anthropic {
				t.Errorf("%s: code %q (anthropic %v), want %q (%v)", tt.name, code, a, tt.code, tt.anthropic)
			}
		}
	}
	if rec := s.do(publicRequest{"GET", "/v1/preflight", "", bearer}); rec.Code != 405 {
		t.Errorf("GET preflight: %d", rec.Code)
	}
}

// TestAdminPreflightAndCatalog: the admin asks on a named key's behalf,
// without its credential, and reads the catalog of the serving snapshot.
func TestAdminPreflightAndCatalog(t *testing.T) {
	s, logs := fidelityServer(t)
	h, err := admin.Handler("t", s)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, b string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(b))
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := do("POST", "/admin/v1/preflight?key=lenient", body(strictBody, "compat"))
	v := decodePreflight(t, rec.Body.Bytes())
	if rec.Code != 200 || v.Key != "lenient" || v.Profile != "lenient" || v.OnFidelityLoss != "allow" || !v.Lossy || v.Serve.Provider != "vendor" {
		t.Errorf("admin preflight %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), `"on_behalf_of":"lenient"`) {
		t.Errorf("log does not say whose behalf: %s", logs)
	}
	if rec := do("POST", "/admin/v1/preflight?key=default", body(strictBody, "compat")); rec.Code != 400 {
		t.Errorf("admin preflight for a rejecting key: %d %s", rec.Code, rec.Body)
	}
	if rec := do("POST", "/admin/v1/preflight?key=ghost", body(strictBody, "compat")); rec.Code != 404 || !strings.Contains(rec.Body.String(), "ghost") {
		t.Errorf("unknown key: %d %s", rec.Code, rec.Body)
	}

	rep := s.Catalog(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	if rep.SourceHash != "sha256:fidelity" || len(rep.Channels) != 2 {
		t.Fatalf("catalog %+v", rep)
	}
	c := rep.Channels[0]
	if c.Provider != "vendor" || c.Origin != vendorOrigin || c.VerifiedBy != vendorVerifiedBy || c.AgeDays == nil || *c.AgeDays != 10 {
		t.Errorf("compat row %+v", c)
	}
}

// TestPreflightAgreesWhenThePoolHasNoMember: a pool-backed candidate whose
// member set is empty (DNS answered, with no address) is passed over by the
// attempt loop with pool_no_member, and preflight refuses exactly as the
// request does rather than naming it as the server.
func TestPreflightAgreesWhenThePoolHasNoMember(t *testing.T) {
	dns := dnstest.Start(t)
	dns.Set(t, "gpus.test", time.Minute)
	g := testGraph()
	g.Pools = []plan.Pool{{Name: "gpus", DNS: "gpus.test:8000", Scheme: "http"}}
	g.Providers[0].BaseURL, g.Providers[0].Pool = "", 0
	up := okUpstream()
	o := testOptions(g, up)
	o.PoolOptions = pool.Options{Resolver: dns.Addr(), MinTTL: time.Second, MaxTTL: time.Minute}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	bearer := map[string]string{"Authorization": "Bearer k-default"}
	req := body(plainBody, "gpt")
	real := s.do(publicRequest{"POST", "/v1/chat/completions", req, bearer})
	pre := s.do(publicRequest{"POST", "/v1/preflight?route=chat_completions", req, bearer})
	if code, _ := errorCode(t, real.Body.Bytes()); real.Code != 503 || code != "pool_no_member" {
		t.Fatalf("request: %d %s", real.Code, real.Body)
	}
	if pre.Code != real.Code || pre.Body.String() != real.Body.String() {
		t.Errorf("preflight %d %s\nrequest   %d %s", pre.Code, pre.Body, real.Code, real.Body)
	}
	if up.Count() != 0 {
		t.Errorf("%d upstream calls", up.Count())
	}
}

// suspendedProviders is a suspension store in which the named providers
// are suspended and nothing can be set.
type suspendedProviders []string

func (suspendedProviders) SetSuspension(context.Context, suspend.Suspension) error {
	return errors.New("read-only")
}

func (suspendedProviders) ClearSuspension(context.Context, suspend.Kind, string) error {
	return errors.New("read-only")
}

func (p suspendedProviders) Suspended(k suspend.Kind, name string) (suspend.Suspension, bool) {
	return suspend.Suspension{Kind: k, Name: name, Reason: "test"}, k == suspend.KindProvider && slices.Contains(p, name)
}

func (suspendedProviders) Suspensions() []suspend.Suspension { return nil }

// SuspensionGeneration never moves: nothing can be set.
func (suspendedProviders) SuspensionGeneration() uint64 { return 0 }

// lossyOnlyGraph serves "tools" from two compat channels, both dropping
// something a strict, structured request uses: the primary's (vendor)
// keeps nothing, the failover's (other) structured output, so a profile
// that allows loss tries the failover first.
func lossyOnlyGraph() *plan.Graph {
	b := testkit.NewGraph("sha256:lossy-only")
	compat, _ := b.CompatAndNative(plan.RouteChatCompletions)
	primary := compat
	primary.Preserves = 0
	other := b.Provider(plan.Provider{Name: "other", BaseURL: "http://other.test/v1", Pool: -1, Auth: "bearer", Channels: []plan.Channel{{
		Name: "openai-compat", Dialect: plan.DialectOpenAI, Tier: plan.TierProviderCompat, Routes: []plan.Route{plan.RouteChatCompletions},
		Preserves: compat.Preserves, Origin: "other"}}})
	failover := plan.Candidate{Provider: other, Tier: plan.TierProviderCompat, Model: "other-large", Preserves: compat.Preserves, Origin: "other"}
	table := b.Table(plan.Entry{Route: plan.RouteChatCompletions, Model: "tools",
		Plan: b.Plan(plan.Plan{Listed: true}, []plan.Candidate{primary, failover}, nil)})
	b.Key("lenient", "k-lenient", b.Profile(plan.Profile{Name: "lenient", Table: table, OnFidelityLoss: "allow"}))
	return b.Build()
}

// TestPreflightSuspendedPrimaryAfterASentCandidate: a suspended primary
// that selection orders after a candidate that is sent refuses nothing,
// as in the attempt loop, which serves from that candidate: preflight
// names it and passes the primary over instead of refusing the request.
func TestPreflightSuspendedPrimaryAfterASentCandidate(t *testing.T) {
	o := testOptions(lossyOnlyGraph(), okUpstream())
	o.Suspensions = suspendedProviders{"vendor"}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	const strictStructured = `{"model":%q,"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object"}}}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object"}}}}`
	auth := map[string]string{"Authorization": "Bearer k-lenient"}
	rec := s.do(publicRequest{"POST", "/v1/preflight", body(strictStructured, "tools"), auth})
	if rec.Code != 200 {
		t.Fatalf("preflight status %d: %s", rec.Code, rec.Body)
	}
	v := decodePreflight(t, rec.Body.Bytes())
	if v.Serve.Provider != "other" || !strings.Contains(v.SkipReasons(), "vendor/openai-compat:"+suspend.ReasonProviderSuspended) {
		t.Errorf("preflight answer %s", rec.Body)
	}
	rec = s.do(publicRequest{"POST", "/v1/chat/completions", body(strictStructured, "tools"), auth})
	if rec.Code != 200 || rec.Header().Get("Pistra-Provider") != "other" {
		t.Errorf("the request: status %d, provider %q: %s", rec.Code, rec.Header().Get("Pistra-Provider"), rec.Body)
	}
}
