package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pistra/pistra/gen"
	"github.com/pistra/pistra/runtime/bundle"
)

// TestSignedBuild makes a key with keygen, builds signed twice and checks
// that the output is the same both times, that it verifies with the public
// half, and that it differs from an unsigned build only by the signature.
func TestSignedBuild(t *testing.T) {
	name := filepath.Join(t.TempDir(), "signing")
	r := pistrac(t, "", "keygen", "-o", name)
	r.want(t, exitOK)
	if info, err := os.Stat(name + ".key"); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v, %v; want mode 0600", info, err)
	}
	pubPEM, err := os.ReadFile(name + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	v, err := bundle.NewVerifier(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stdout, "key id "+v.KeyID()) {
		t.Errorf("keygen printed %q, want the key id %s", r.stdout, v.KeyID())
	}
	pistrac(t, "", "keygen", "-o", name).want(t, exitUsage) // never overwrites

	out := filepath.Join(t.TempDir(), "gen")
	first := pistrac(t, "", "build", "-o", out, "-signing-key", name+".key", defaultPolicy)
	first.want(t, exitOK)
	if !strings.Contains(first.stdout, "by key "+v.KeyID()) {
		t.Errorf("build printed %q, want the signing key's id", first.stdout)
	}
	signed := readDir(t, out)
	pistrac(t, "", "build", "-o", out, "-signing-key", name+".key", defaultPolicy).want(t, exitOK)
	for file, b := range readDir(t, out) {
		if !bytes.Equal(b, signed[file]) {
			t.Errorf("%s differs between two signed builds", file)
		}
	}
	g, err := bundle.Load(signed["bundle.json"])
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(g); err != nil {
		t.Fatalf("the signed bundle does not verify: %v", err)
	}
	if g.Digest != gen.Graph.Digest {
		t.Errorf("signed digest %s, checked-in gen/ has %s (is gen/ stale?)", g.Digest, gen.Graph.Digest)
	}
	unsigned := readDir(t, buildDefault(t))
	if strings.Contains(string(unsigned["bundle.json"]), `"signatures"`) {
		t.Error("an unsigned build wrote signatures")
	}
	if bytes.Equal(unsigned["bundle.json"], signed["bundle.json"]) {
		t.Error("signing did not change bundle.json")
	}
}

func TestBuildRefusesABadSigningKey(t *testing.T) {
	key := filepath.Join(t.TempDir(), "bad.key")
	if err := os.WriteFile(key, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := pistrac(t, "", "build", "-o", filepath.Join(t.TempDir(), "gen"), "-signing-key", key, defaultPolicy)
	r.want(t, exitUsage)
	if !strings.Contains(r.stderr, "no PEM block") {
		t.Errorf("stderr %q does not say what is wrong with the key", r.stderr)
	}
}
