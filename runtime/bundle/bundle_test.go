package bundle_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

func TestLoadRoundTrips(t *testing.T) {
	for name, g := range map[string]*plan.Graph{
		"maximal":   bundletest.Maximal(),
		"synthetic": bundletest.Synthetic(bundletest.Medium),
	} {
		t.Run(name, func(t *testing.T) {
			in := testkit.MarshalJSON(t, g)
			loaded, err := bundle.Load(in)
			if err != nil {
				t.Fatal(err)
			}
			if out := testkit.MarshalJSON(t, loaded); !bytes.Equal(in, out) {
				t.Fatal("the loaded graph differs from the one written")
			}
		})
	}
}

func TestLoadedGraphServesLookups(t *testing.T) {
	g, err := bundle.Load(testkit.MarshalJSON(t, bundletest.Maximal()))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := g.Lookup(1, plan.RouteMessages, "claude-sonnet-4")
	if !ok {
		t.Fatal("profile eval has no plan for claude-sonnet-4 on messages")
	}
	if c := g.CandidatesOf(p); len(c) != 2 || c[0].Tier != plan.TierNative {
		t.Fatalf("candidates %+v", c)
	}
	if _, ok := g.Lookup(1, plan.RouteChatCompletions, "llama-3-70b"); ok {
		t.Fatal("profile eval may not use llama-3-70b")
	}
}

func TestLoadRefuses(t *testing.T) {
	cases := []struct {
		name string
		doc  func(t *testing.T) []byte
		want string
	}{
		{"not JSON", func(*testing.T) []byte { return []byte("{") }, "not JSON"},
		{"schema violation", func(t *testing.T) []byte {
			return bytes.Replace(testkit.MarshalJSON(t, bundletest.Maximal()), []byte(`"auth":"bearer"`), []byte(`"auth":"basic"`), 1)
		}, "/providers/0/auth"},
		{"bad reference", func(t *testing.T) []byte {
			g := bundletest.Maximal()
			g.Keys[1].Profile = 7
			return testkit.MarshalJSON(t, g)
		}, "keys[1] (evals).profile: index 7 out of range (2 defined)"},
		{"edited after build", func(t *testing.T) []byte {
			g := bundletest.Maximal()
			g.Providers[0].BaseURL = "https://elsewhere.example/v1"
			return testkit.MarshalJSON(t, g)
		}, "the content's digest is sha256:"},
		{"no digest", func(t *testing.T) []byte {
			g := bundletest.Maximal()
			g.Digest = ""
			return testkit.MarshalJSON(t, g)
		}, bundle.ErrNoDigest.Error()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := bundle.Load(c.doc(t))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, %v; want an error containing %q", g, err, c.want)
			}
		})
	}
}

func BenchmarkLoadLarge(b *testing.B) {
	doc, err := json.Marshal(bundletest.Synthetic(bundletest.Large))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := bundle.Load(doc); err != nil {
			b.Fatal(err)
		}
	}
}
