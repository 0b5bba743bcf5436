package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a throwaway certificate authority for one test: a CA, a server
// certificate for 127.0.0.1 and localhost, and a client certificate, all
// signed by the CA and written as PEM files under the test's temporary
// directory. Keys are generated for each test and never leave it.
type PKI struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	ca                    *x509.Certificate
	caKey                 *ecdsa.PrivateKey
	dir                   string
	serial                int64
	tb                    testing.TB
}

// ServerName is the name the server certificate holds besides 127.0.0.1.
const ServerName = "localhost"

// NewPKI makes a CA and its server and client certificates.
func NewPKI(tb testing.TB) *PKI {
	tb.Helper()
	p := &PKI{dir: tb.TempDir(), tb: tb}
	p.caKey = newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pistra test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		tb.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		tb.Fatal(err)
	}
	p.serial = 1
	p.CAFile = p.write("ca.pem", "CERTIFICATE", der)
	p.ServerCert, p.ServerKey = p.Issue("server", x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey = p.Issue("client", x509.ExtKeyUsageClientAuth)
	return p
}

// Issue signs a new certificate for name with the CA and returns the
// paths of its PEM certificate and key.
func (p *PKI) Issue(name string, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	p.tb.Helper()
	key := newKey(p.tb)
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{ServerName}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		p.tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		p.tb.Fatal(err)
	}
	return p.write(name+".pem", "CERTIFICATE", der), p.write(name+"-key.pem", "EC PRIVATE KEY", keyDER)
}

func (p *PKI) write(name, kind string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		p.tb.Fatal(err)
	}
	return path
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}
