package server

import (
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
)

func sealedGraph(t *testing.T, priv ed25519.PrivateKey) *plan.Graph {
	t.Helper()
	g := testGraph()
	if err := bundle.Seal(g); err != nil {
		t.Fatal(err)
	}
	if priv != nil {
		if err := bundle.Sign(g, priv); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// TestBundleKeyGuardsStartAndReload: with a bundle key, only graphs it
// signed serve; a refused reload leaves the signed one serving and its
// digest and signer in the status.
func TestBundleKeyGuardsStartAndReload(t *testing.T) {
	priv, pubPEM := testkit.SigningKey(t)
	key, err := bundle.NewVerifier(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	signed := sealedGraph(t, priv)
	serving := signed
	o := testOptions(nil, okUpstream())
	o.Load = func() (*plan.Graph, string, error) { return serving, "test", nil }
	o.BundleKey = key

	serving = sealedGraph(t, nil)
	if _, err := New(o); !errors.Is(err, bundle.ErrUnsigned) {
		t.Fatalf("New with an unsigned graph: %v, want %v", err, bundle.ErrUnsigned)
	}

	serving = signed
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	want := admin.BundleStatus{Digest: signed.Digest, SignedBy: key.KeyID(), SignatureVerified: true}
	if got := s.Status().Bundle; got != want {
		t.Fatalf("status bundle %+v, want %+v", got, want)
	}
	serving = sealedGraph(t, nil)
	if _, err := s.Reload(); !errors.Is(err, bundle.ErrUnsigned) {
		t.Fatalf("reload to an unsigned graph: %v", err)
	}
	st := s.Status()
	if st.Bundle != want || st.LastReloadError == "" {
		t.Fatalf("after a refused reload: bundle %+v (want %+v), last error %q", st.Bundle, want, st.LastReloadError)
	}
	if s.snap.Load().Graph != signed {
		t.Fatal("the refused reload replaced the serving graph")
	}
}

func TestStatusWithoutBundleKey(t *testing.T) {
	priv, _ := testkit.SigningKey(t)
	for name, g := range map[string]*plan.Graph{"unsigned": sealedGraph(t, nil), "signed": sealedGraph(t, priv)} {
		t.Run(name, func(t *testing.T) {
			s := newTestServerWith(t, g, okUpstream())
			want := admin.BundleStatus{Digest: g.Digest, SignedBy: bundle.Unsigned}
			if name == "signed" {
				want.SignedBy = bundle.KeyID(priv.Public().(ed25519.PublicKey))
			}
			if got := s.Status().Bundle; got != want {
				t.Fatalf("status bundle %+v, want %+v", got, want)
			}
		})
	}
}

// TestReloadSaysWhetherChanged: reloading the bundle that serves is a
// no-op and says so; a bundle whose digest differs is a change.
func TestReloadSaysWhetherChanged(t *testing.T) {
	g := sealedGraph(t, nil)
	serving := g
	o := testOptions(nil, okUpstream())
	o.Load = func() (*plan.Graph, string, error) { return serving, "test", nil }
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Reload(); err != nil || changed {
		t.Fatalf("reloading the same bundle: changed %v, %v; want false, nil", changed, err)
	}
	edited := testGraph()
	edited.Providers[0].TimeoutMS += 1000
	if err := bundle.Seal(edited); err != nil {
		t.Fatal(err)
	}
	if edited.Digest == g.Digest {
		t.Fatal("the edit left the digest as it was")
	}
	serving = edited
	if changed, err := s.Reload(); err != nil || !changed {
		t.Fatalf("reloading an edited bundle: changed %v, %v; want true, nil", changed, err)
	}
}
