package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
)

// sign signs g with the ed25519 private key in the PEM file at path.
func sign(g *plan.Graph, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	priv, err := bundle.ParsePrivateKey(b)
	if err != nil {
		return fmt.Errorf("signing key %s: %w", path, err)
	}
	return bundle.Sign(g, priv)
}

// keygen writes a new ed25519 key pair as NAME.key (PKCS #8, readable by
// its owner only) and NAME.pub (PKIX), the formats openssl genpkey writes,
// and prints the key id signatures will carry. It never overwrites a file.
func (c *cli) keygen(args []string) int {
	fs := c.flags("keygen", "-o NAME")
	name := fs.String("o", "", "write the pair as `NAME`.key and NAME.pub")
	if _, status, ok := c.parse(fs, args, 0, 0); !ok {
		return status
	}
	if *name == "" {
		return c.usageError("keygen", "-o NAME is required")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return c.fail("keygen", err, exitFail)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return c.fail("keygen", err, exitFail)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return c.fail("keygen", err, exitFail)
	}
	if err := writeNew(*name+".key", "PRIVATE KEY", privDER, 0o600); err != nil {
		return c.fail("keygen", err, exitUsage)
	}
	if err := writeNew(*name+".pub", "PUBLIC KEY", pubDER, 0o644); err != nil {
		return c.fail("keygen", errors.Join(err, os.Remove(*name+".key")), exitUsage)
	}
	fmt.Fprintf(c.stdout, "wrote %s.key and %s.pub; key id %s\n", *name, *name, bundle.KeyID(pub))
	return exitOK
}

// writeNew writes one PEM block to a file that must not exist yet.
func writeNew(path, typ string, der []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
