package certs_test

import (
	"crypto/tls"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/certs"
)

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// serial is the serial number of the certificate a handshake would get.
func serial(t *testing.T, cfg *tls.Config) *big.Int {
	t.Helper()
	c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.SerialNumber
}

func TestReloadSwapsAndKeepsTheOldOnError(t *testing.T) {
	ca := testkit.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c1, k1, s1 := ca.Issue(t, "first")
	write(t, certFile, c1)
	write(t, keyFile, k1)
	f, err := certs.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config()
	if got := serial(t, cfg); got.Cmp(s1) != 0 {
		t.Fatalf("serving serial %v, want %v", got, s1)
	}

	c2, k2, s2 := ca.Issue(t, "second")
	write(t, certFile, c2)
	write(t, keyFile, k2)
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := serial(t, cfg); got.Cmp(s2) != 0 {
		t.Fatalf("after reload serving serial %v, want %v", got, s2)
	}

	// A certificate whose key is another's: refused, the second serves on.
	c3, _, _ := ca.Issue(t, "third")
	write(t, certFile, c3)
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Fatalf("reload of a mismatched pair: %v; want an error naming %s", err, certFile)
	}
	if got := serial(t, cfg); got.Cmp(s2) != 0 {
		t.Fatalf("after a refused reload serving serial %v, want %v", got, s2)
	}
}

func TestLoadRefusesMissingFiles(t *testing.T) {
	if _, err := certs.Load("/nonexistent/tls.crt", "/nonexistent/tls.key"); err == nil {
		t.Fatal("loaded a pair that does not exist")
	}
}
