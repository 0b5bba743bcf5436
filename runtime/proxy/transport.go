package proxy

import (
	"net"
	"net/http"
	"time"
)

// TransportOptions tune the shared upstream transport.
type TransportOptions struct {
	// MaxIdleConnsPerHost should cover the expected concurrency per
	// upstream, or connections are closed and re-dialled under load.
	MaxIdleConnsPerHost int
	DialTimeout         time.Duration
	TLSHandshakeTimeout time.Duration
	IdleConnTimeout     time.Duration
}

// DefaultTransportOptions suit a gateway in front of a handful of upstreams.
var DefaultTransportOptions = TransportOptions{
	MaxIdleConnsPerHost: 512,
	DialTimeout:         5 * time.Second,
	TLSHandshakeTimeout: 5 * time.Second,
	IdleConnTimeout:     90 * time.Second,
}

// NewTransport builds the one transport every upstream request shares, so
// connections are pooled across requests and providers. HTTP/2 is
// attempted on TLS upstreams; compression is left alone (no Accept-Encoding
// is added and nothing is decoded), so bodies pass through byte for byte.
// No response-header timeout is set here: each provider's own timeout
// bounds its attempts.
func NewTransport(o TransportOptions) *http.Transport {
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         d.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        0, // no global cap; the per-host cap governs
		MaxIdleConnsPerHost: o.MaxIdleConnsPerHost,
		IdleConnTimeout:     o.IdleConnTimeout,
		TLSHandshakeTimeout: o.TLSHandshakeTimeout,
		DisableCompression:  true,
		WriteBufferSize:     16 << 10,
		ReadBufferSize:      16 << 10,
	}
}
