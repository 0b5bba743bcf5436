// Package certs serves pistrad's own listeners a TLS certificate read from
// files that an operator rotates in place: Reload reads them again, and a
// handshake after it presents the new certificate while connections made
// before keep theirs. A pair that does not load leaves the old one serving.
// It also reads the CA files pistra's clients verify servers against.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync/atomic"
	"time"
)

// File is a certificate and key pair read from PEM files.
type File struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

// Load reads the pair once; it is the start-up check, so an unreadable
// or mismatched pair is an error before anything listens.
func Load(certFile, keyFile string) (*File, error) {
	f := &File{certFile: certFile, keyFile: keyFile}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Reload reads the files again and swaps the new pair in; on error the
// pair serving keeps serving.
func (f *File) Reload() error {
	c, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return fmt.Errorf("tls certificate %s, key %s: %w", f.certFile, f.keyFile, err)
	}
	if c.Leaf == nil { // Go 1.23+ fills Leaf; parsed here for Describe otherwise
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return fmt.Errorf("tls certificate %s: %w", f.certFile, err)
		}
	}
	f.cert.Store(&c)
	return nil
}

// Describe names the serving certificate for a log line.
func (f *File) Describe() []any {
	leaf := f.cert.Load().Leaf
	return []any{"cert_file", f.certFile, "subject", leaf.Subject.String(),
		"serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339)}
}

// Config is a server configuration presenting the pair current at each
// handshake. net/http adds h2 to its protocols when it serves TLS.
func (f *File) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return f.cert.Load(), nil
		},
	}
}
