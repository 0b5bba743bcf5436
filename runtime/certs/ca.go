package certs

import (
	"crypto/x509"
	"fmt"
	"os"
)

// CAPool reads a PEM file of CA certificates into a pool that trusts
// them and nothing else: what a client verifies a server against when the
// policy names the CA.
func CAPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}
