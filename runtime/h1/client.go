// Package h1 is a lean HTTP/1.1 client for cleartext upstreams: the
// in-cluster inference servers and sidecars that sit a hop away from the
// gateway, where a request's cost is mostly the client's own overhead.
//
// net/http's Transport hands every request between three goroutines (the
// caller, a writer and a reader per connection), and each hand-off is a
// scheduler wake-up. Here the calling goroutine writes the request and reads
// the response on the connection itself, so a request costs its syscalls
// and nothing more. Parsing is net/http's own (http.ReadResponse); only the
// connection handling is ours. TLS, HTTP/2 and proxies stay with Transport.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Client is an http.RoundTripper for http:// URLs. It is safe for
// concurrent use. The zero value is not usable; see New.
type Client struct {
	dialer         *net.Dialer
	maxIdlePerHost int
	idleTimeout    time.Duration

	mu   sync.Mutex
	idle map[string][]*conn // per host:port, most recently used last
}

// New returns a client that keeps at most maxIdlePerHost idle connections
// to each host and closes one that sat idle longer than idleTimeout.
// Zero for either means no limit, as in net/http.
func New(dialer *net.Dialer, maxIdlePerHost int, idleTimeout time.Duration) *Client {
	if maxIdlePerHost <= 0 {
		maxIdlePerHost = math.MaxInt
	}
	if idleTimeout <= 0 {
		idleTimeout = math.MaxInt64
	}
	return &Client{dialer: dialer, maxIdlePerHost: maxIdlePerHost, idleTimeout: idleTimeout, idle: map[string][]*conn{}}
}

type conn struct {
	nc        net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer // writes through sent
	sent      sentCounter
	addr      string
	idleSince time.Time
}

const bufSize = 16 << 10

// aLongTimeAgo is a deadline that has passed: setting it wakes a blocked
// read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

// RoundTrip sends req on an idle connection to its host, or a new one, and
// returns the response with its headers read. The body reads straight off
// the connection; reading it to EOF returns the connection to the pool,
// closing it early closes the connection. Cancelling req's context aborts
// the request, body included.
func (c *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return nil, fmt.Errorf("h1: scheme %q: only http is served", req.URL.Scheme)
	}
	if req.ContentLength < 0 || (req.ContentLength > 0 && req.Body == nil) {
		return nil, errors.New("h1: the request body must have a known length")
	}
	if err := checkHeaders(req.Header); err != nil {
		return nil, err
	}
	ctx := req.Context()
	addr := hostPort(req.URL.Host)
	for {
		cn, reused, err := c.get(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, err := c.exchange(ctx, cn, req)
		if err == nil {
			return resp, nil
		}
		cn.nc.Close()
		// A pooled connection the peer dropped is only found out by using
		// it. When the request could not even be written, nothing reached
		// the upstream and it is safe to send again on a fresh connection.
		var nw nothingWritten
		if !reused || !errors.As(err, &nw) || (req.Body != nil && req.GetBody == nil) || ctx.Err() != nil {
			return nil, ctxErr(ctx, err)
		}
		if req.Body == nil {
			continue
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		again := *req // the caller's request is not ours to change
		again.Body = body
		req = &again
	}
}

// sentCounter counts the bytes a connection took, so a failed write can
// tell whether any of the request left.
type sentCounter struct {
	nc net.Conn
	n  int64
}

func (s *sentCounter) Write(p []byte) (int, error) {
	n, err := s.nc.Write(p)
	s.n += int64(n)
	return n, err
}

// nothingWritten marks a write failure that sent no byte of the request.
type nothingWritten struct{ error }

func (e nothingWritten) Unwrap() error { return e.error }

// exchange writes req on cn and reads the response head.
func (c *Client) exchange(ctx context.Context, cn *conn, req *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { cn.nc.SetDeadline(aLongTimeAgo) })
	before := cn.sent.n
	err := writeRequest(cn.bw, req)
	if err != nil && cn.sent.n == before {
		err = nothingWritten{err}
	}
	// Callers that lend the body's memory wait for this report before
	// reusing it, as they do with net/http's Transport.
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
	if err != nil {
		stop()
		return nil, err
	}
	resp, err := readResponse(cn.br, req)
	if err != nil {
		stop()
		return nil, fmt.Errorf("h1: reading response: %w", err)
	}
	b := &body{c: c, cn: cn, r: resp.Body, ctx: ctx, stop: stop, reusable: !resp.Close}
	resp.Body = b
	return resp, nil
}

// readResponse reads the final response head, passing over informational
// (1xx) ones.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("unexpected 101 Switching Protocols")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue
		}
		return resp, nil
	}
}

// writeRequest writes req's head and body and flushes. Host, Content-Length
// and the connection-level headers are this client's to write; the caller's
// copies of them are ignored.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(req.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	for k, vs := range req.Header {
		if ownHeader(k) {
			continue
		}
		for _, v := range vs {
			if v == "" && k == "User-Agent" {
				continue // net/http's convention for "send none"
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("Content-Length: ")
	var num [20]byte
	bw.Write(strconv.AppendInt(num[:0], req.ContentLength, 10))
	bw.WriteString("\r\n\r\n")
	if req.Body != nil {
		n, err := io.Copy(bw, req.Body)
		req.Body.Close()
		if err == nil && n != req.ContentLength {
			err = fmt.Errorf("body is %d bytes, ContentLength says %d", n, req.ContentLength)
		}
		if err != nil {
			return fmt.Errorf("h1: request body: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("h1: writing request: %w", err)
	}
	return nil
}

func ownHeader(k string) bool {
	switch k {
	case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade":
		return true
	}
	return false
}

// checkHeaders refuses names and values that would break the request line
// structure: a header value carrying CR or LF could smuggle a header in.
func checkHeaders(h http.Header) error {
	for k, vs := range h {
		if k == "" || !validText(k, false) {
			return fmt.Errorf("h1: invalid header name %q", k)
		}
		for _, v := range vs {
			if !validText(v, true) {
				return fmt.Errorf("h1: invalid value for header %q", k)
			}
		}
	}
	return nil
}

func validText(s string, value bool) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '\r' || b == '\n' || b == 0 || b == 0x7f:
			return false
		case !value && (b <= ' ' || b == ':'):
			return false
		}
	}
	return true
}

// get returns a live idle connection to addr, or dials one.
func (c *Client) get(ctx context.Context, addr string) (cn *conn, reused bool, err error) {
	now := time.Now()
	for {
		c.mu.Lock()
		list := c.idle[addr]
		if len(list) == 0 {
			c.mu.Unlock()
			break
		}
		cn = list[len(list)-1]
		list[len(list)-1] = nil
		c.idle[addr] = list[:len(list)-1]
		c.mu.Unlock()
		if now.Sub(cn.idleSince) < c.idleTimeout && peerOpen(cn.nc) {
			return cn, true, nil
		}
		cn.nc.Close()
	}
	nc, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, false, ctxErr(ctx, err)
	}
	cn = &conn{nc: nc, br: bufio.NewReaderSize(nc, bufSize), addr: addr}
	cn.sent.nc = nc
	cn.bw = bufio.NewWriterSize(&cn.sent, bufSize)
	return cn, false, nil
}

// put returns a connection whose last response was read whole.
func (c *Client) put(cn *conn) {
	if err := cn.nc.SetDeadline(time.Time{}); err != nil {
		cn.nc.Close()
		return
	}
	cn.idleSince = time.Now()
	c.mu.Lock()
	list := c.idle[cn.addr]
	if len(list) >= c.maxIdlePerHost {
		c.mu.Unlock()
		cn.nc.Close()
		return
	}
	c.idle[cn.addr] = append(list, cn)
	c.mu.Unlock()
}

// CloseIdleConnections closes every pooled connection.
func (c *Client) CloseIdleConnections() {
	c.mu.Lock()
	idle := c.idle
	c.idle = map[string][]*conn{}
	c.mu.Unlock()
	for _, list := range idle {
		for _, cn := range list {
			cn.nc.Close()
		}
	}
}

// body is a response body that gives its connection back once read whole.
type body struct {
	c        *Client
	cn       *conn
	r        io.ReadCloser
	ctx      context.Context
	stop     func() bool
	reusable bool
	sawEOF   bool // touched by Read only
	done     atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		if b.sawEOF {
			return 0, io.EOF
		}
		return 0, errors.New("h1: read on closed body")
	}
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF:
		b.sawEOF = true
		b.release(true)
	case err != nil:
		b.release(false)
		err = ctxErr(b.ctx, err)
	}
	return n, err
}

// Close ends the exchange. A body not read to its end leaves the connection
// out of step, so the connection is closed rather than drained: draining an
// event stream could take as long as the stream. A response that has no
// body (204, 304, a HEAD's) has nothing left to drain.
func (b *body) Close() error {
	b.release(b.r == http.NoBody)
	return nil
}

func (b *body) release(whole bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	// stop reports false when the context's func already ran, leaving a
	// deadline in the past on the connection.
	if b.stop() && whole && b.reusable && b.cn.br.Buffered() == 0 {
		b.c.put(b.cn)
		return
	}
	b.cn.nc.Close()
}

// ctxErr prefers the context's cause when the context ended the request, so
// callers see why (a timeout, the client leaving) rather than an I/O error.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", context.Cause(ctx), err)
	}
	return err
}

func hostPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(trimBrackets(host), "80")
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}
