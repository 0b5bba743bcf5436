package snapshot_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/snapshot"
)

// testGraph has an OpenAI provider (chat, responses and embeddings) and
// an Anthropic one; profile 0 ("default", key "default" presenting
// k-default) routes all of it, profile 1 ("narrow", key "narrow"
// presenting k-narrow) only gpt on chat. "hidden" is routed but not
// listed.
func testGraph() *plan.Graph {
	b := testkit.NewGraph("sha256:test")
	oa := b.Provider(plan.Provider{Name: "oa", BaseURL: "http://oa.test/v1", Pool: -1, Auth: "bearer", CredentialEnv: "OA_KEY",
		Channels: []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
			Routes: []plan.Route{plan.RouteChatCompletions, plan.RouteResponses, plan.RouteEmbeddings}, Origin: "native", Preserves: plan.AllCaps}}})
	an := b.Provider(plan.Provider{Name: "an", BaseURL: "http://an.test/v1", Pool: -1, Auth: "x-api-key", CredentialEnv: "AN_KEY",
		Channels: []plan.Channel{{Name: "native", Dialect: plan.DialectAnthropic, Tier: plan.TierNative,
			Routes: []plan.Route{plan.RouteMessages}, Origin: "native", Preserves: plan.AllCaps}}})
	serve := func(p int, model string, listed bool) int {
		return b.Plan(plan.Plan{NativeOnly: true, Listed: listed}, []plan.Candidate{{Provider: p, Model: model + "-upstream",
			Tier: plan.TierNative, Preserves: plan.AllCaps, Origin: "native", Primary: true}}, nil)
	}
	gpt := plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt", Plan: serve(oa, "gpt", true)}
	all := b.Table(gpt,
		plan.Entry{Route: plan.RouteResponses, Model: "gpt", Plan: serve(oa, "gpt", true)},
		plan.Entry{Route: plan.RouteEmbeddings, Model: "embed", Plan: serve(oa, "embed", true)},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "hidden", Plan: serve(oa, "hidden", false)},
		plan.Entry{Route: plan.RouteMessages, Model: "claude", Plan: serve(an, "claude", true)})
	b.Key("default", "k-default", b.Profile(plan.Profile{Name: "default", Table: all}))
	b.Key("narrow", "k-narrow", b.Profile(plan.Profile{Name: "narrow", Table: b.Table(gpt)}))
	return b.Build()
}

// credentials has every variable testGraph's providers read.
func credentials(name string) (string, bool) {
	v, ok := map[string]string{"OA_KEY": "sk-oa", "AN_KEY": "sk-an"}[name]
	return v, ok
}

func noCredentials(string) (string, bool) { return "", false }

func newSnapshot(t *testing.T, g *plan.Graph) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.New(g, "test", credentials)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNewNeedsEveryCredential: a graph whose credential variables are not
// all set is refused, naming each one missing and its provider.
func TestNewNeedsEveryCredential(t *testing.T) {
	_, err := snapshot.New(testGraph(), "test", noCredentials)
	if err == nil || !strings.Contains(err.Error(), `OA_KEY (provider "oa")`) || !strings.Contains(err.Error(), `AN_KEY (provider "an")`) {
		t.Fatalf("no credentials: %v, want both variables named", err)
	}
	onlyOA := func(name string) (string, bool) { return map[string]string{"OA_KEY": "sk-oa"}[name], name == "OA_KEY" }
	if _, err := snapshot.New(testGraph(), "test", onlyOA); err == nil || strings.Contains(err.Error(), "OA_KEY") ||
		!strings.Contains(err.Error(), "AN_KEY") {
		t.Fatalf("one credential missing: %v, want AN_KEY alone named", err)
	}
	s := newSnapshot(t, testGraph())
	if len(s.Upstreams) != 2 || s.Upstreams[0].Name != "oa" || s.Upstreams[1].Name != "an" {
		t.Fatalf("upstreams %+v, want oa and an in the graph's order", s.Upstreams)
	}
	if s.Source != "test" || s.LoadedAt.IsZero() {
		t.Errorf("source %q loaded at %v", s.Source, s.LoadedAt)
	}
}

// TestNewRefusesUnloadableCEL: a bundle whose expressions do not load is
// refused whole.
func TestNewRefusesUnloadableCEL(t *testing.T) {
	for name, e := range map[string]plan.Expr{
		"not base64":   {Kind: "rule", Source: "true", Checked: "%%%"},
		"not an AST":   {Kind: "rule", Source: "true", Checked: "bm90IGFuIGFzdA=="},
		"unknown kind": {Kind: "mystery", Source: "true", Checked: ""},
	} {
		g := testGraph()
		g.CEL = []plan.Expr{e}
		if _, err := snapshot.New(g, "test", credentials); err == nil || !strings.HasPrefix(err.Error(), "cel: ") {
			t.Errorf("%s: %v, want refused as cel", name, err)
		}
	}
}

// Moved from runtime/server (server_test.go), where it tested this
// package from outside.
func TestSnapshotRefusesBadKeys(t *testing.T) {
	for name, mutate := range map[string]func(g *plan.Graph){
		"short hash":    func(g *plan.Graph) { g.Keys[0].Hash = "sha256:abcd" },
		"other digest":  func(g *plan.Graph) { g.Keys[0].Hash = "md5:" + strings.Repeat("0", 64) },
		"not hex":       func(g *plan.Graph) { g.Keys[0].Hash = "sha256:" + strings.Repeat("z", 64) },
		"duplicate key": func(g *plan.Graph) { g.Keys[1].Hash = g.Keys[0].Hash },
		"bad profile":   func(g *plan.Graph) { g.Keys[0].Profile = 9 },
		"long hash":     func(g *plan.Graph) { g.Keys[0].Hash += "00" },
		"no prefix":     func(g *plan.Graph) { g.Keys[0].Hash = strings.TrimPrefix(g.Keys[0].Hash, "sha256:") },
	} {
		g := testGraph()
		mutate(g)
		if _, err := snapshot.New(g, "test", credentials); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	snap := newSnapshot(t, testGraph())
	if k, p, ok := snap.KeyOf("k-narrow"); !ok || k != 1 || p != 1 {
		t.Errorf("k-narrow -> key %d profile %d %v, want key 1 profile 1", k, p, ok)
	}
	if _, _, ok := snap.KeyOf("k-other"); ok {
		t.Errorf("unknown key accepted")
	}
	if got := snap.Models(0, plan.DialectOpenAI); strings.Join(got, ",") != "embed,gpt" {
		t.Errorf("openai models %v", got)
	}
}

// TestKeyOfComparesWholeDigests: keys whose digests share the first 8
// bytes (the index's bucket) are told apart by the whole digest, so a
// presented key matches only the key declared with its own digest.
func TestKeyOfComparesWholeDigests(t *testing.T) {
	d := sha256.Sum256([]byte("k-twin"))
	near := d
	near[sha256.Size-1] ^= 1 // same bucket, another key
	hash := func(d [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(d[:]) }

	g := testGraph()
	g.Keys = append(g.Keys, plan.Key{Name: "near", Hash: hash(near), Profile: 0})
	s := newSnapshot(t, g)
	if k, _, ok := s.KeyOf("k-twin"); ok {
		t.Fatalf("k-twin matched key %d (%s) by its digest's first bytes", k, g.Keys[k].Name)
	}

	g = testGraph()
	g.Keys = append(g.Keys, plan.Key{Name: "near", Hash: hash(near), Profile: 0}, plan.Key{Name: "twin", Hash: hash(d), Profile: 1})
	s = newSnapshot(t, g)
	if k, p, ok := s.KeyOf("k-twin"); !ok || g.Keys[k].Name != "twin" || p != 1 {
		t.Fatalf("k-twin -> key %d profile %d %v, want twin on profile 1", k, p, ok)
	}
	for _, secret := range []string{"", "k-default ", "K-DEFAULT", "k-defaul"} {
		if k, _, ok := s.KeyOf(secret); ok {
			t.Errorf("%q matched key %d", secret, k)
		}
	}
	if k, p, ok := s.KeyOf("k-default"); !ok || k != 0 || p != 0 {
		t.Errorf("k-default -> key %d profile %d %v", k, p, ok)
	}
}

// TestKeyNamed finds a declared key by its name, never by its secret.
func TestKeyNamed(t *testing.T) {
	s := newSnapshot(t, testGraph())
	if k, p, ok := s.KeyNamed("narrow"); !ok || k != 1 || p != 1 {
		t.Errorf("narrow -> key %d profile %d %v", k, p, ok)
	}
	for _, name := range []string{"k-narrow", "Narrow", ""} {
		if _, _, ok := s.KeyNamed(name); ok {
			t.Errorf("%q named a key", name)
		}
	}
}

// TestModelsListing: GET /v1/models lists, per profile and dialect, the
// listed models of every route of that dialect, sorted, each once; an
// unlisted plan stays routable but unlisted.
func TestModelsListing(t *testing.T) {
	s := newSnapshot(t, testGraph())
	for _, c := range []struct {
		profile int
		d       plan.Dialect
		want    []string
	}{
		{0, plan.DialectOpenAI, []string{"embed", "gpt"}}, // gpt on two routes, once; hidden not listed
		{0, plan.DialectAnthropic, []string{"claude"}},
		{1, plan.DialectOpenAI, []string{"gpt"}},
		{1, plan.DialectAnthropic, nil},
	} {
		if got := s.Models(c.profile, c.d); !slices.Equal(got, c.want) {
			t.Errorf("profile %d %s: %q, want %q", c.profile, c.d, got, c.want)
		}
	}
}

// TestRequestRulesPerProfile: the rules a request must evaluate are kept
// per profile, deployment-wide first, those the build folded into the
// plans left out.
func TestRequestRulesPerProfile(t *testing.T) {
	g := testGraph()
	g.Rules = []plan.Rule{{Name: "folded", Static: true}, {Name: "everyone"}}
	g.Profiles[1].Rules = []plan.Rule{{Name: "narrow-only"}}
	s := newSnapshot(t, g)
	names := func(rs []plan.RequestRule) (out []string) {
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	if got := names(s.RequestRules[0]); !slices.Equal(got, []string{"everyone"}) {
		t.Errorf("default: %q", got)
	}
	if got := names(s.RequestRules[1]); !slices.Equal(got, []string{"everyone", "narrow-only"}) {
		t.Errorf("narrow: %q", got)
	}
}
