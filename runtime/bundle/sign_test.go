package bundle_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

// newKey generates a key pair and the Verifier of its public half.
func newKey(t *testing.T) (ed25519.PrivateKey, *bundle.Verifier) {
	t.Helper()
	priv, pubPEM := testkit.SigningKey(t)
	v, err := bundle.NewVerifier(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if want := bundle.KeyID(priv.Public().(ed25519.PublicKey)); v.KeyID() != want {
		t.Fatalf("verifier key id %s, want %s", v.KeyID(), want)
	}
	return priv, v
}

func signed(t *testing.T, priv ed25519.PrivateKey) *plan.Graph {
	t.Helper()
	g := bundletest.Maximal()
	if err := bundle.Sign(g, priv); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSignatureVerifiesAfterARoundTrip(t *testing.T) {
	priv, v := newKey(t)
	g := signed(t, priv)
	again := signed(t, priv)
	if g.Signatures[0] != again.Signatures[0] {
		t.Fatal("signing the same content with the same key gave different signatures")
	}
	loaded, err := bundle.Load(testkit.MarshalJSON(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(loaded); err != nil {
		t.Fatalf("a signed bundle does not verify: %v", err)
	}
	if got := bundle.Signer(loaded); got != v.KeyID() {
		t.Fatalf("Signer = %s, want %s", got, v.KeyID())
	}
}

func TestVerifierRefuses(t *testing.T) {
	priv, v := newKey(t)
	other, otherV := newKey(t)
	cases := []struct {
		name string
		edit func(g *plan.Graph)
		want string
	}{
		{"unsigned", func(g *plan.Graph) { g.Signatures = nil },
			"the bundle is unsigned, and only bundles signed by key " + v.KeyID()},
		{"content edited, digest kept", func(g *plan.Graph) { g.Providers[0].BaseURL = "https://elsewhere.example/v1" },
			"the content's digest is sha256:"},
		{"content edited, digest recomputed", func(g *plan.Graph) {
			sig := g.Signatures
			g.Providers[0].BaseURL = "https://elsewhere.example/v1"
			if err := bundle.Seal(g); err != nil {
				t.Fatal(err)
			}
			g.Signatures = sig
		}, "the signature is over digest " + signed(t, priv).Digest + " but the bundle's content has digest "},
		{"signature value altered", func(g *plan.Graph) {
			cut := strings.LastIndexByte(g.Signatures[0], '.') + 1
			sig, err := base64.RawURLEncoding.DecodeString(g.Signatures[0][cut:])
			if err != nil {
				t.Fatal(err)
			}
			sig[0] ^= 1
			g.Signatures[0] = g.Signatures[0][:cut] + base64.RawURLEncoding.EncodeToString(sig)
		}, "does not verify with that key"},
		{"signed by another key", func(g *plan.Graph) {
			if err := bundle.Sign(g, other); err != nil {
				t.Fatal(err)
			}
		}, "the bundle is signed by key " + otherV.KeyID() + ", not by the trusted key " + v.KeyID()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := signed(t, priv)
			c.edit(g)
			err := v.Verify(g)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Verify: %v; want an error containing %q", err, c.want)
			}
		})
	}
}

// TestOpenSSLKeys checks that the keys openssl makes, as the README tells
// operators to, sign and verify, and that KeyID is the fingerprint the
// README's openssl pipeline prints.
func TestOpenSSLKeys(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("no openssl on PATH")
	}
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "k.key"), filepath.Join(dir, "k.pub")
	for _, args := range [][]string{
		{"genpkey", "-algorithm", "ed25519", "-out", key},
		{"pkey", "-in", key, "-pubout", "-out", pub},
	} {
		if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	privPEM, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := bundle.ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	v, err := bundle.NewVerifier(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(signed(t, priv)); err != nil {
		t.Fatal(err)
	}
	der, err := exec.Command(openssl, "pkey", "-pubin", "-in", pub, "-outform", "DER").Output()
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.ParsePKIXPublicKey(der)
	if err != nil || !bytes.Equal(pk.(ed25519.PublicKey), priv.Public().(ed25519.PublicKey)) {
		t.Fatalf("openssl's DER public key does not match: %v", err)
	}
}

func TestParseKeyRefusesOtherKinds(t *testing.T) {
	priv, _ := newKey(t)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if _, err := bundle.NewVerifier(privPEM); err == nil || !strings.Contains(err.Error(), `PEM block is "PRIVATE KEY", want "PUBLIC KEY"`) {
		t.Fatalf("a private key given as the public one: %v", err)
	}
	if _, err := bundle.ParsePrivateKey([]byte("not pem")); err == nil || !strings.Contains(err.Error(), "no PEM block") {
		t.Fatalf("garbage as a private key: %v", err)
	}
}
