package cluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// raftPreamble is the first byte raft's dialer writes on a connection; no
// HTTP request starts with a control character.
const raftPreamble byte = 0x01

// handshakeTimeout bounds how long an accepted connection may take to
// present its certificate and first byte, so a silent peer cannot hold a
// goroutine and a socket open.
const handshakeTimeout = 10 * time.Second

// Options says how a node's cluster port is reached and secured.
type Options struct {
	// Advertise is host:port by which the other nodes reach this one, and
	// the name its certificate is verified against: a stable DNS name in
	// Kubernetes, not the address it happened to bind.
	Advertise string
	// Credentials secure the port with mutual TLS; nil only with Insecure.
	Credentials *Credentials
	// Insecure serves plaintext; it is refused unless the port is bound on
	// a loopback address, so it is only good for tests on one host.
	Insecure bool
	Logger   *slog.Logger
}

// Listener is one node's cluster port, split into raft's stream layer
// (Raft) and a listener for the internal HTTP endpoint (HTTP).
type Listener struct {
	inner  net.Listener
	addr   advertised
	creds  *Credentials
	log    *slog.Logger
	client *http.Client

	raft raftLayer
	http *side

	done     chan struct{}
	doneOnce sync.Once
}

// Listen binds bind (host:port) and serves it as o says.
func Listen(bind string, o Options) (*Listener, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("cluster listen: %w", err)
	}
	l, err := New(ln, o)
	if err != nil {
		ln.Close()
	}
	return l, err
}

// New serves the already bound ln as o says; Close closes ln.
func New(ln net.Listener, o Options) (*Listener, error) {
	if err := o.validate(ln.Addr()); err != nil {
		return nil, err
	}
	l := &Listener{inner: ln, addr: advertised(o.Advertise), creds: o.Credentials, log: o.Logger, done: make(chan struct{})}
	if l.log == nil {
		l.log = slog.Default()
	}
	l.raft = raftLayer{side: newSide(l)}
	l.http = newSide(l)
	l.client = l.newClient()
	go l.serve()
	return l, nil
}

func (o *Options) validate(bound net.Addr) error {
	if _, _, err := net.SplitHostPort(o.Advertise); err != nil {
		return fmt.Errorf("cluster advertise address %q: %w", o.Advertise, err)
	}
	if o.Insecure {
		if o.Credentials != nil {
			return errors.New("cluster: insecure mode and TLS credentials are exclusive")
		}
		if tcp, ok := bound.(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			return fmt.Errorf("cluster: insecure (plaintext) mode is for loopback only, not %s", bound)
		}
		return nil
	}
	if o.Credentials == nil {
		return errors.New("cluster: TLS credentials are required (plaintext needs the explicit insecure mode)")
	}
	return o.Credentials.validate()
}

// Raft is the stream layer for raft's NetworkTransport.
func (l *Listener) Raft() raft.StreamLayer { return &l.raft }

// HTTP is where connections for the internal HTTP endpoint arrive,
// already authenticated when the port is secured.
func (l *Listener) HTTP() net.Listener { return l.http }

// Advertise is the address the other nodes reach this one by.
func (l *Listener) Advertise() string { return string(l.addr) }

// Client is the HTTP client for other nodes' internal endpoints,
// presenting this node's certificate and verifying theirs by the name
// dialled; build its URLs with URL.
func (l *Listener) Client() *http.Client { return l.client }

// URL is the URL of path on the node advertised as addr.
func (l *Listener) URL(addr, path string) string {
	if l.creds == nil {
		return "http://" + addr + path
	}
	return "https://" + addr + path
}

// Close stops accepting and closes both sides.
func (l *Listener) Close() error {
	l.doneOnce.Do(func() { close(l.done) })
	l.raft.Close()
	l.http.Close()
	l.client.CloseIdleConnections()
	err := l.inner.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (l *Listener) newClient() *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	if l.creds != nil {
		// An empty ServerName is filled in per request with the URL's
		// host: each peer is verified by the name it is dialled by.
		tr.TLSClientConfig = l.creds.clientConfig("")
	}
	return &http.Client{Transport: tr}
}

func (l *Listener) serve() {
	var backoff time.Duration
	for {
		c, err := l.inner.Accept()
		if err == nil {
			backoff = 0
			go l.route(c)
			continue
		}
		select {
		case <-l.done:
			return
		default:
		}
		// As net/http does: a failing accept (out of descriptors) is
		// retried after a growing pause rather than ending the port.
		backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
		l.log.Warn("cluster listener: accept failed", "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-l.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// route authenticates c, reads its first byte, and hands it to raft or to
// the HTTP side.
func (l *Listener) route(c net.Conn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	conn := c
	if l.creds != nil {
		tc := tls.Server(c, l.creds.serverConfig())
		if err := tc.Handshake(); err != nil {
			l.log.Warn("cluster connection refused", "remote", c.RemoteAddr().String(), "err", err)
			c.Close()
			return
		}
		conn = tc
	}
	br := bufio.NewReader(conn)
	first, err := br.Peek(1)
	if err != nil {
		conn.Close()
		return
	}
	dst := l.http
	if first[0] == raftPreamble {
		br.Discard(1)
		dst = l.raft.side
	}
	c.SetDeadline(time.Time{})
	dst.deliver(&bufferedConn{Conn: conn, r: br})
}

// bufferedConn is a connection whose first bytes were read ahead.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// side is one kind of connection's net.Listener.
type side struct {
	l      *Listener
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newSide(l *Listener) *side {
	return &side{l: l, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (s *side) deliver(c net.Conn) {
	select {
	case s.conns <- c:
	case <-s.closed:
		c.Close()
	}
}

func (s *side) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close closes this side only: raft's transport closes its stream layer
// on shutdown while the HTTP side may still be draining.
func (s *side) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *side) Addr() net.Addr { return s.l.addr }

// raftLayer is raft's StreamLayer over the cluster port.
type raftLayer struct{ *side }

func (r *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(deadline)
	if creds := r.l.creds; creds != nil {
		host, _, err := net.SplitHostPort(string(address))
		if err != nil {
			conn.Close()
			return nil, err
		}
		tc := tls.Client(conn, creds.clientConfig(host))
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return nil, fmt.Errorf("cluster: TLS to %s: %w", address, err)
		}
		conn = tc
	}
	if _, err := conn.Write([]byte{raftPreamble}); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// advertised is the configured name:port, what raft records as this
// node's address.
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }
