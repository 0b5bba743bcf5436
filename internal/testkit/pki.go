package testkit

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// PKI is a test CA's certificates as files, for what reads TLS material
// from paths (a policy's tls block, the fake provider's flags): the CA, a
// server certificate for 127.0.0.1 and localhost, and a client
// certificate, written as PEM under the test's temporary directory.
type PKI struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	ca                    *CA
	dir                   string
	tb                    testing.TB
}

// NewPKI makes a CA and its server and client certificates.
func NewPKI(tb testing.TB) *PKI {
	tb.Helper()
	p := &PKI{ca: NewCA(tb), dir: tb.TempDir(), tb: tb}
	p.CAFile = p.write("ca.pem", p.ca.CertPEM())
	p.ServerCert, p.ServerKey = p.Issue("server", x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey = p.Issue("client", x509.ExtKeyUsageClientAuth)
	return p
}

// Issue signs a new certificate for name with the CA and returns the
// paths of its PEM certificate and key (the same paths for the same name,
// so issuing again rotates them in place).
func (p *PKI) Issue(name string, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	p.tb.Helper()
	cert, key, _ := p.ca.IssueFor(p.tb, name, usage)
	return p.write(name+".pem", cert), p.write(name+"-key.pem", key)
}

func (p *PKI) write(name string, data []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.tb.Fatal(err)
	}
	return path
}
