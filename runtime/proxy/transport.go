package proxy

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/pistra/pistra/runtime/h1"
)

// TransportOptions tune the shared upstream transport.
type TransportOptions struct {
	// MaxIdleConnsPerHost should cover the expected concurrency per
	// upstream, or connections are closed and re-dialled under load.
	MaxIdleConnsPerHost int
	DialTimeout         time.Duration
	TLSHandshakeTimeout time.Duration
	// IdleConnTimeout closes a connection idle that long, in either
	// client: h1's reaper, net/http's own timers.
	IdleConnTimeout time.Duration
	// MaxResponseHeaderBytes bounds an upstream response's head, any 1xx
	// heads before it included (0: DefaultMaxResponseHeaderBytes), in
	// either client. A larger head fails the attempt as a connection
	// failure would (the connect class, which retry.on and failover.on
	// name), and its connection is closed unread. h1 also passes over at
	// most h1.Max1xx informational responses.
	MaxResponseHeaderBytes int64
	// StdlibOnly sends cleartext upstreams through net/http's Transport
	// too, rather than the lean HTTP/1.1 client.
	StdlibOnly bool
}

// DefaultTransportOptions suit a gateway in front of a handful of upstreams.
var DefaultTransportOptions = TransportOptions{
	MaxIdleConnsPerHost: 512,
	DialTimeout:         5 * time.Second,
	TLSHandshakeTimeout: 5 * time.Second,
	IdleConnTimeout:     90 * time.Second,
	// A response head over this is refused rather than buffered; net/http's
	// Transport would take up to 10 MiB.
	MaxResponseHeaderBytes: DefaultMaxResponseHeaderBytes,
}

// DefaultMaxResponseHeaderBytes is the response head limit (1 MiB), when
// TransportOptions set none.
const DefaultMaxResponseHeaderBytes = h1.DefaultMaxHeaderBytes

func (o TransportOptions) maxHeaderBytes() int64 {
	if o.MaxResponseHeaderBytes > 0 {
		return o.MaxResponseHeaderBytes
	}
	return DefaultMaxResponseHeaderBytes
}

// NewTransport builds the one transport every upstream request shares, so
// connections are pooled across requests and providers. Cleartext upstreams
// reached without a proxy go through the lean HTTP/1.1 client (runtime/h1);
// everything else goes through net/http's Transport, which attempts HTTP/2
// on TLS upstreams. Compression is left alone either way (no
// Accept-Encoding is added and nothing is decoded), so bodies pass through
// byte for byte. No response-header timeout is set here: each provider's
// own timeout bounds its attempts.
func NewTransport(o TransportOptions) *Transport {
	d := o.dialer()
	t := &Transport{std: newStdTransport(o, d)}
	if !o.StdlibOnly {
		t.lean = h1.New(d, h1.Options{MaxIdlePerHost: o.MaxIdleConnsPerHost, IdleTimeout: o.IdleConnTimeout,
			MaxHeaderBytes: o.maxHeaderBytes()})
	}
	return t
}

// NewTLSTransport builds the transport of one provider with TLS options of
// its own (a CA bundle, a client certificate): net/http's, tuned as
// NewTransport's, with cfg for every handshake. Its connections are its
// own, so a client certificate is never presented to another provider, and
// the other providers keep sharing the one pooled transport. It is built
// once per snapshot.
func NewTLSTransport(o TransportOptions, cfg *tls.Config) *http.Transport {
	t := newStdTransport(o, o.dialer())
	t.TLSClientConfig = cfg
	return t
}

func (o TransportOptions) dialer() *net.Dialer {
	return &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
}

func newStdTransport(o TransportOptions, d *net.Dialer) *http.Transport {
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           0, // no global cap; the per-host cap governs
		MaxIdleConnsPerHost:    o.MaxIdleConnsPerHost,
		IdleConnTimeout:        o.IdleConnTimeout,
		TLSHandshakeTimeout:    o.TLSHandshakeTimeout,
		MaxResponseHeaderBytes: o.maxHeaderBytes(),
		DisableCompression:     true,
		WriteBufferSize:        16 << 10,
		ReadBufferSize:         16 << 10,
	}
}

// Transport sends each upstream request through the client that suits its
// URL. It is safe for concurrent use.
type Transport struct {
	lean *h1.Client // nil with StdlibOnly
	std  *http.Transport
	// direct caches, per host, whether a cleartext request to it goes
	// without a proxy (the environment's proxy settings are read once).
	direct sync.Map // host -> bool
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.lean != nil && req.URL.Scheme == "http" && t.isDirect(req) {
		return t.lean.RoundTrip(req)
	}
	return t.std.RoundTrip(req)
}

// Do sends req, ended early when ctx (the client's) ends or cut fires.
// The lean client watches cut alone, so cut follows ctx there; net/http's
// watches a context, so it gets one derived from ctx that cut cancels.
func (t *Transport) Do(ctx context.Context, req *http.Request, cut *h1.Cut) (*http.Response, error) {
	if t.lean != nil && req.URL.Scheme == "http" && t.isDirect(req) {
		cut.Follow(ctx)
		return t.lean.Do(req, cut)
	}
	return cutRoundTrip(ctx, t.std, req, cut)
}

// cutter is a transport that ends a request on its cut (Transport).
type cutter interface {
	Do(context.Context, *http.Request, *h1.Cut) (*http.Response, error)
}

// roundTrip sends req on rt, ended early when ctx ends or cut fires.
func roundTrip(ctx context.Context, rt http.RoundTripper, req *http.Request, cut *h1.Cut) (*http.Response, error) {
	if c, ok := rt.(cutter); ok {
		return c.Do(ctx, req, cut)
	}
	return cutRoundTrip(ctx, rt, req, cut)
}

// cutRoundTrip sends req on a transport that ends requests by their
// context: one derived from ctx, cancelled when cut fires. net/http
// writes a request's head and body in one write only for bodies it knows
// to be in memory, so a counted body goes as the bytes.Reader it is,
// counted done when the transport reports the write.
func cutRoundTrip(ctx context.Context, rt http.RoundTripper, req *http.Request, cut *h1.Cut) (*http.Response, error) {
	if b, ok := req.Body.(*sentBody); ok {
		b.trace.WroteRequest = b.wrote
		ctx = httptrace.WithClientTrace(ctx, &b.trace)
		req.Body = io.NopCloser(&b.Reader)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	cut.Watch(cancel)
	return rt.RoundTrip(req.WithContext(ctx))
}

func (t *Transport) isDirect(req *http.Request) bool {
	if v, ok := t.direct.Load(req.URL.Host); ok {
		return v.(bool)
	}
	u, err := t.std.Proxy(req)
	direct := err == nil && u == nil
	t.direct.Store(req.URL.Host, direct)
	return direct
}

// CloseIdleConnections closes the pooled connections of both clients.
func (t *Transport) CloseIdleConnections() {
	if t.lean != nil {
		t.lean.CloseIdleConnections()
	}
	t.std.CloseIdleConnections()
}

// CloseIdleConnectionsTo closes the pooled connections to hosts (as base
// URLs write them), which a reload has dropped; connections still in use
// close once idle for IdleConnTimeout. h1 closes just those; net/http's
// Transport can only close all of its idle connections, so the hosts
// kept re-dial once.
func (t *Transport) CloseIdleConnectionsTo(hosts []string) {
	if len(hosts) == 0 {
		return
	}
	if t.lean != nil {
		t.lean.CloseIdleConnectionsTo(hosts)
	}
	t.std.CloseIdleConnections()
}
