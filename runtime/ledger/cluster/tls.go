// Package cluster is the network a pistrad cluster talks over: one port per
// node carrying both raft's RPCs and the ledger's internal HTTP endpoint,
// over mutual TLS with a cluster CA, so that nothing reaching the port
// without a certificate from that CA can join, read or write the ledger.
//
// A connection is told apart after the handshake by its first byte: raft's
// dialer writes a preamble no HTTP request can start with. The listener
// advertises the node's configured name (a stable DNS name in Kubernetes),
// never the address it bound, so a node that comes back on another IP
// keeps its identity in raft's configuration, and peers verify its
// certificate against that name.
package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Credentials are what a node trusts and what it proves itself with: the
// cluster CA, and this node's certificate and key, issued by that CA for
// the name the node advertises.
type Credentials struct {
	CA   *x509.CertPool
	Cert tls.Certificate
}

// LoadCredentials reads the cluster CA (PEM, one or more certificates) and
// this node's certificate and key (PEM) from files.
func LoadCredentials(caFile, certFile, keyFile string) (*Credentials, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster CA %s: no PEM certificate in it", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	return &Credentials{CA: pool, Cert: cert}, nil
}

func (c *Credentials) validate() error {
	if c.CA == nil || len(c.Cert.Certificate) == 0 {
		return errors.New("cluster credentials need the CA and this node's certificate")
	}
	return nil
}

// serverConfig accepts only peers presenting a certificate the cluster CA
// signed: that certificate is what admits a node to the cluster.
func (c *Credentials) serverConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{c.Cert},
		ClientCAs:    c.CA,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

// clientConfig verifies the peer's certificate against serverName, the
// name this node dials it by (its advertised name in raft's
// configuration), so a certificate of the CA issued to another name is
// not enough to pose as that peer.
func (c *Credentials) clientConfig(serverName string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{c.Cert},
		RootCAs:      c.CA,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS13,
	}
}
