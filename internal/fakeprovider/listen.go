package fakeprovider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Listener is a Server serving HTTP on a bound address.
type Listener struct {
	// BaseURL is what SDKs take as their base URL: http://host:port/v1.
	BaseURL string
	// Addr is the bound address, with the port chosen when asked for :0.
	Addr string
	srv  *http.Server
	done chan error

	mu     sync.Mutex
	unused map[net.Conn]struct{}
}

// Listen binds addr (e.g. "127.0.0.1:0") and serves s there until Shutdown.
func (s *Server) Listen(addr string) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider: listen on %s: %w", addr, err)
	}
	return s.serve(ln, "http"), nil
}

// TLSOptions serve a Listener over TLS.
type TLSOptions struct {
	// CertFile and KeyFile are the server's certificate and key (PEM).
	CertFile, KeyFile string
	// ClientCAFile, when set, makes the listener require of every client
	// a certificate signed by one of its CAs (mutual TLS): a client
	// without one fails the handshake.
	ClientCAFile string
}

// ListenTLS is Listen over TLS; the base URL is https.
func (s *Server) ListenTLS(addr string, o TLSOptions) (*Listener, error) {
	cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider: server certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("fakeprovider: client CA: %w", err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("fakeprovider: client CA %s: no PEM certificate in it", o.ClientCAFile)
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", addr, cfg)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider: listen on %s: %w", addr, err)
	}
	return s.serve(ln, "https"), nil
}

func (s *Server) serve(ln net.Listener, scheme string) *Listener {
	l := &Listener{
		Addr:    ln.Addr().String(),
		BaseURL: scheme + "://" + ln.Addr().String() + "/v1",
		done:    make(chan error, 1),
		unused:  map[net.Conn]struct{}{},
	}
	l.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ConnState: l.track}
	go func() { l.done <- l.srv.Serve(ln) }()
	return l
}

// track remembers connections that have not carried a request yet. HTTP
// clients open such spares when they race a dial against reuse, and
// http.Server.Shutdown would wait five seconds for each to turn idle.
func (l *Listener) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if state == http.StateNew {
		l.unused[c] = struct{}{}
	} else {
		delete(l.unused, c)
	}
}

// Shutdown stops accepting calls and waits for those in flight, streams
// included, until ctx ends.
func (l *Listener) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	for c := range l.unused {
		_ = c.Close()
	}
	l.mu.Unlock()
	err := l.srv.Shutdown(ctx)
	if serveErr := <-l.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// TB is the part of testing.TB that Start uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Start builds a server, serves it on a random loopback port for the rest
// of the test and returns it with its base URL.
func Start(tb TB, opts Options) (*Server, string) {
	tb.Helper()
	return start(tb, opts, func(s *Server) (*Listener, error) { return s.Listen("127.0.0.1:0") })
}

// StartTLS is Start over TLS.
func StartTLS(tb TB, opts Options, t TLSOptions) (*Server, string) {
	tb.Helper()
	return start(tb, opts, func(s *Server) (*Listener, error) { return s.ListenTLS("127.0.0.1:0", t) })
}

func start(tb TB, opts Options, listen func(*Server) (*Listener, error)) (*Server, string) {
	tb.Helper()
	s, err := New(opts)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	l, err := listen(s)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
	})
	return s, l.BaseURL
}
