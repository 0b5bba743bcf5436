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
	"sync"
	"testing"
	"time"
)

// CA is a certificate authority made for one test, for servers on
// loopback: nothing it issues is trusted outside the test's own pool. Keys
// are generated for each test and never leave it.
type CA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	mu     sync.Mutex
	serial int64
}

// ServerName is the name a server certificate holds besides 127.0.0.1.
const ServerName = "localhost"

// validity is how long what a test CA signs stays valid around now.
const validity = 24 * time.Hour

// NewCA makes a CA.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := ecKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pistra test CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, serial: 1}
}

// Pool trusts the CA and nothing else.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// CertPEM is the CA's own certificate, for a file a server or client
// trusts.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// Issue signs a server certificate for 127.0.0.1 and localhost with the
// given common name and returns it and its key as PEM, with the serial
// number given to it (each issue gets a new one).
func (ca *CA) Issue(t testing.TB, commonName string) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	return ca.IssueFor(t, commonName, x509.ExtKeyUsageServerAuth)
}

// IssueFor is Issue for a server or a client certificate (usage); only a
// server's names 127.0.0.1 and localhost.
func (ca *CA) IssueFor(t testing.TB, commonName string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	key := ecKey(t)
	ca.mu.Lock()
	ca.serial++
	serial = big.NewInt(ca.serial)
	ca.mu.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{ServerName}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), serial
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
