// Package h1 is HTTP/1.1 on cleartext connections, both ends: a client for
// the in-cluster inference servers and sidecars that sit a hop away from
// the gateway, and a server for the gateway's own listener (server.go),
// each taking the common exchange itself and leaving the rest to net/http.
//
// The calling goroutine writes the request and reads the response on the
// connection itself, where net/http's Transport hands each request to a
// writer and a reader goroutine per connection. What that is worth is
// measured, not assumed: BenchmarkRoundTrip (bench_test.go) runs both
// clients against one loopback server, a small JSON answer and a 50-event
// stream. There h1 allocates 30 to 31 objects per exchange where
// Transport allocates 56 to 58, and about 30% fewer bytes; its CPU per
// exchange is within the run-to-run noise of Transport's. A response head
// of the common shape is parsed here (readHead: one string for the whole
// head), any other by http.ReadResponse, and FuzzReadHead holds the two
// to the same result. TLS, HTTP/2 and proxies stay with Transport.
//
// It has the limits Transport has: a response head (with any 1xx heads
// before it) is bounded by Options.MaxHeaderBytes, at most Max1xx
// informational responses are passed over, and idle connections are
// closed after Options.IdleTimeout by one timer per client.
package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
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
	maxHeaderBytes int64

	mu   sync.Mutex
	idle map[string][]*conn // per host:port, most recently used last
	// reaper closes connections idle for idleTimeout; reapAt is when it
	// fires, zero while it is not armed (see scheduleReap).
	reaper *time.Timer
	reapAt time.Time
}

// Options tune a Client. Zero values take the defaults noted.
type Options struct {
	// MaxIdlePerHost caps the idle connections kept to each host (0: no
	// cap, as in net/http).
	MaxIdlePerHost int
	// IdleTimeout is how long a connection may sit idle before it is
	// closed (0: no limit, as in net/http).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a response's head, the 1xx heads before it
	// included (default DefaultMaxHeaderBytes). A larger one fails the
	// request with ErrHeaderTooLarge and its connection is closed unread.
	MaxHeaderBytes int64
}

// DefaultMaxHeaderBytes is the response head limit when Options set none:
// 1 MiB, net/http's DefaultMaxHeaderBytes for request heads. An LLM API's
// response head is a few KiB.
const DefaultMaxHeaderBytes = 1 << 20

// Max1xx is how many informational (1xx) responses are passed over before
// the final one; one more fails the request with ErrTooMany1xx. An
// upstream sends at most a 100 Continue and a 103 Early Hints or two.
const Max1xx = 5

var (
	// ErrHeaderTooLarge: the response head exceeded MaxHeaderBytes, as a
	// 431 would say of a request's.
	ErrHeaderTooLarge = errors.New("response headers too large")
	// ErrTooMany1xx: more than Max1xx informational responses.
	ErrTooMany1xx = fmt.Errorf("more than %d informational (1xx) responses", Max1xx)
)

// noTimeout is the idle timeout that means none.
const noTimeout = time.Duration(math.MaxInt64)

// New returns a client tuned by o that dials with dialer.
func New(dialer *net.Dialer, o Options) *Client {
	c := &Client{dialer: dialer, maxIdlePerHost: o.MaxIdlePerHost, idleTimeout: o.IdleTimeout,
		maxHeaderBytes: o.MaxHeaderBytes, idle: map[string][]*conn{}}
	if c.maxIdlePerHost <= 0 {
		c.maxIdlePerHost = math.MaxInt
	}
	if c.idleTimeout <= 0 {
		c.idleTimeout = noTimeout
	}
	if c.maxHeaderBytes <= 0 {
		c.maxHeaderBytes = DefaultMaxHeaderBytes
	}
	return c
}

type conn struct {
	nc net.Conn
	// br reads through head. Its buffer is lent from readers only while
	// there are bytes to read (see park): a stream waiting on its
	// upstream, or an idle connection, holds none.
	br *bufio.Reader
	// shell is a spare reader value: park moves br's contents, buffer and
	// all, into it and gives it to the pool; unpark takes a full one from
	// the pool, and the emptied value becomes the shell. nil while parked.
	shell     *bufio.Reader
	parked    bool
	head      headLimit
	sent      sentCounter
	addr      string
	idleSince time.Time
	peek      *peeker
	// abort wakes a blocked read or write at once: the request's cut
	// fired.
	abort func(error)
}

// headLimit bounds what a connection's reader takes off the socket while
// a response head is read, so an upstream cannot make the client buffer
// an endless head; left < 0 means unbounded, as a body reads. The bound
// counts what the buffered reader reads ahead, as net/http's does.
type headLimit struct {
	r    io.Reader
	left int64
	// err is the connection's first read failure, returned again to every
	// later read: a connection that failed once is closed, never reused,
	// and a caller that let the failure pass (WaitReady) meets it at its
	// next Read.
	err error
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.left == 0 {
		return 0, ErrHeaderTooLarge
	}
	if l.left > 0 && int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	if l.left > 0 {
		l.left -= int64(n)
	}
	l.err = err
	return n, err
}

// bufSize is a connection's reader's size and the pooled request writer's.
// With a 4 KiB reader (net/http's), one make bench run had the SSE cells
// cost 5-13% more CPU per request; the reader's buffer is lent only while
// bytes are read, so its size costs an open stream nothing while it waits.
const bufSize = 16 << 10

// readers holds the connections' read buffers, each in a bufio.Reader
// value that park and unpark swap in and out of a connection's own.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}

// park gives the connection's read buffer back to readers. Only a reader
// with nothing buffered parks; a sticky read error is kept by head.
func (cn *conn) park() {
	if cn.parked || cn.br.Buffered() > 0 {
		return
	}
	full := cn.shell
	*full, *cn.br = *cn.br, bufio.Reader{}
	full.Reset(nil) // no reference to this connection from the pool
	readers.Put(full)
	cn.shell, cn.parked = nil, true
}

// unpark lends the connection a read buffer again, before it reads.
func (cn *conn) unpark() {
	if !cn.parked {
		return
	}
	r := readers.Get().(*bufio.Reader)
	*cn.br, *r = *r, bufio.Reader{}
	cn.br.Reset(&cn.head)
	cn.shell, cn.parked = r, false
}

// waitReadable blocks until a read would not wait: bytes are buffered, or
// the socket has something to say (bytes, its end, an error). Where the
// socket can be waited on without reading it, the buffer goes back to the
// pool meanwhile; a failure is left for the read that follows.
func (cn *conn) waitReadable() {
	if cn.br.Buffered() > 0 {
		return
	}
	if cn.peek.canWait() {
		cn.park()
		if testHookParked != nil {
			testHookParked(cn)
		}
		cn.peek.wait()
	}
	cn.unpark()
	if cn.br.Buffered() == 0 && !cn.peek.canWait() {
		_, _ = cn.br.Peek(1) // head keeps a failure for the next read
	}
}

// testHookParked, when set, is called by waitReadable on the waiting
// goroutine once the connection has parked.
var testHookParked func(*conn)

// writers lends a connection its buffered writer only while it writes a
// request: a connection spends its life reading (a stream runs for
// minutes), and a buffer per connection would sit idle the whole time.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}

// write sends req on cn through a pooled writer.
func (cn *conn) write(req *http.Request) error {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(&cn.sent)
	err := writeRequest(bw, req)
	bw.Reset(nil) // drops what a failed write left buffered
	writers.Put(bw)
	return err
}

// aLongTimeAgo is a deadline that has passed: setting it wakes a blocked
// read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

// RoundTrip sends req on an idle connection to its host, or a new one, and
// returns the response with its headers read. The body reads straight off
// the connection; reading it to EOF returns the connection to the pool,
// closing it early closes the connection. Cancelling req's context aborts
// the request, body included.
func (c *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	cut := new(Cut)
	cut.Follow(req.Context())
	resp, err := c.Do(req, cut)
	if err != nil {
		cut.Stop()
		return nil, err
	}
	resp.Body.(*body).ownCut = true
	return resp, nil
}

// Do is RoundTrip with the request ended early by cut. The request's
// context is read for its values (an httptrace ClientTrace) and bounds a
// dial, nothing else. req.Body is closed whatever happens, as a
// RoundTripper's must be.
func (c *Client) Do(req *http.Request, cut *Cut) (resp *http.Response, err error) {
	defer func() {
		if err != nil && req.Body != nil {
			req.Body.Close() // the body of the last try; one already sent is closed twice, which is allowed
		}
	}()
	if req.URL.Scheme != "http" {
		return nil, fmt.Errorf("h1: scheme %q: only http is served", req.URL.Scheme)
	}
	if req.ContentLength < 0 || (req.ContentLength > 0 && req.Body == nil) {
		return nil, errors.New("h1: the request body must have a known length")
	}
	if err := checkHeaders(req.Header); err != nil {
		return nil, err
	}
	addr := hostPort(req.URL.Host)
	for {
		cn, reused, err := c.get(req.Context(), cut, addr)
		if err != nil {
			return nil, err
		}
		resp, err = c.exchange(cut, cn, req)
		if err == nil {
			return resp, nil
		}
		cn.nc.Close()
		// A pooled connection the peer dropped is only found out by using
		// it. When the request could not even be written, nothing reached
		// the upstream and it is safe to send again on a fresh connection.
		var nw nothingWritten
		if !reused || !errors.As(err, &nw) || (req.Body != nil && req.GetBody == nil) || cut.Cause() != nil {
			return nil, cut.err(err)
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

// exchange writes req on cn and reads the response head, cut aborting
// the connection's I/O until the body is released.
func (c *Client) exchange(cut *Cut, cn *conn, req *http.Request) (*http.Response, error) {
	if !cut.Watch(cn.abort) {
		return nil, nothingWritten{cut.Cause()}
	}
	before := cn.sent.n
	err := cn.write(req)
	if err != nil && cn.sent.n == before {
		err = nothingWritten{err}
	}
	// Callers that lend the body's memory wait for this report before
	// reusing it, as they do with net/http's Transport.
	if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
	if err != nil {
		cut.Unwatch()
		return nil, err
	}
	cn.waitReadable() // the upstream thinks: the connection holds no buffer meanwhile
	resp, err := c.readResponse(cn, req)
	if err != nil {
		cut.Unwatch()
		return nil, fmt.Errorf("h1: reading response: %w", err)
	}
	b := &body{c: c, cn: cn, r: resp.Body, cut: cut, reusable: !resp.Close}
	resp.Body = b
	return resp, nil
}

// readResponse reads the final response head, passing over at most Max1xx
// informational ones, all within maxHeaderBytes together.
func (c *Client) readResponse(cn *conn, req *http.Request) (*http.Response, error) {
	cn.head.left = c.maxHeaderBytes
	defer func() { cn.head.left = -1 }()
	for skipped := 0; ; skipped++ {
		resp, err := readHead(cn.br, req)
		switch {
		case err != nil && cn.head.left == 0:
			return nil, fmt.Errorf("%w: over %d bytes", ErrHeaderTooLarge, c.maxHeaderBytes)
		case err != nil:
			return nil, err
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("unexpected 101 Switching Protocols")
		case resp.StatusCode >= 100 && resp.StatusCode < 200 && skipped == Max1xx:
			return nil, ErrTooMany1xx
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue
		}
		return resp, nil
	}
}

// body is a response body that gives its connection back once read whole.
type body struct {
	c   *Client
	cn  *conn
	r   io.ReadCloser
	cut *Cut
	// ownCut: RoundTrip made cut for this request alone, and the body
	// stops it once released.
	ownCut   bool
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
	b.cn.unpark()
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF:
		b.sawEOF = true
		b.release(true)
	case err != nil:
		b.release(false)
		err = b.cut.err(err)
	}
	return n, err
}

// WaitReady blocks until a Read would not wait on the connection: bytes
// of the answer are in the connection's buffer, or the connection has
// something to say (bytes, its end or an error, which Read then reports).
// A relay waits here before it takes a buffer to read into, and the
// connection lends its own back meanwhile (waitReadable), so a stream
// waiting on its upstream holds no read buffer at all.
func (b *body) WaitReady() {
	if b.done.Load() || b.r == http.NoBody {
		return
	}
	b.cn.waitReadable()
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
	// Unwatch reports false when the cut fired, leaving a deadline in the
	// past on the connection. A read that already met the peer's end (its
	// last bytes and the close in one fill) leaves a connection the next
	// request would fail on.
	reuse := b.cut.Unwatch() && whole && b.reusable && b.cn.br.Buffered() == 0 && b.cn.head.err == nil
	if b.ownCut {
		// Not Stop: a Read racing this Close would report its closed
		// connection as a cancel.
		b.cut.unfollowContext()
	}
	if reuse {
		b.cn.park() // an idle connection holds no buffer
		b.c.put(b.cn)
		return
	}
	b.cn.nc.Close()
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
