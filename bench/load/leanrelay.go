package main

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// leanRelayEnv, when set in the environment, turns this binary into the
// floor pistrad is measured against: the relay a careful Go programmer
// would write with net/http and no logic. It reads the body into a pooled
// buffer, checks the client's bearer key in constant time, forwards on one
// pooled Transport with the upstream's key, and copies the answer back
// through a pooled buffer, flushing every read. Every feature pistrad has
// must fit inside what this relay spends.
const leanRelayEnv = "PISTRA_BENCH_LEAN_RELAY_TARGET"

// The client key the lean relay accepts and the upstream key it sends.
const (
	leanKeyEnv      = "PISTRA_BENCH_LEAN_RELAY_KEY"
	leanUpstreamEnv = "PISTRA_BENCH_UPSTREAM_KEY"
)

// maxLeanBody bounds a request body, as any relay in front of users must.
const maxLeanBody = 1 << 20

type leanRelay struct {
	t        *http.Transport
	base     *url.URL
	want     []byte   // "Bearer " + the client key
	upstream []string // the Authorization header sent upstream, shared read-only
	bodies   sync.Pool
	copies   sync.Pool
}

// serveLeanRelay serves the relay to target on a loopback port.
func serveLeanRelay(target string) error {
	l, err := newLeanRelay(target, os.Getenv(leanKeyEnv), os.Getenv(leanUpstreamEnv))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	stats, err := serveStats()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "listening %s stats=%s\n", ln.Addr(), stats)
	return http.Serve(ln, l)
}

// newLeanRelay relays to target for clients holding key, presenting
// upstreamKey there.
func newLeanRelay(target, key, upstreamKey string) (*leanRelay, error) {
	u, err := url.Parse(strings.TrimSuffix(target, "/"))
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 4096
	t.DisableCompression = true
	l := &leanRelay{t: t, base: u, want: []byte("Bearer " + key), upstream: []string{"Bearer " + upstreamKey}}
	l.bodies.New = func() any { return newLeanBody(&l.bodies) }
	l.copies.New = func() any { b := make([]byte, 32<<10); return &b }
	return l, nil
}

func (l *leanRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), l.want) != 1 {
		http.Error(w, "bad key", http.StatusUnauthorized)
		return
	}
	b := l.bodies.Get().(*leanBody)
	defer b.release()
	if err := b.fill(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	u := *l.base
	u.Path += r.URL.Path
	req := (&http.Request{Method: r.Method, URL: &u, Host: u.Host, Header: make(http.Header, 2),
		ContentLength: int64(len(b.buf)), GetBody: b.getBody}).WithContext(r.Context())
	req.Body = b.open()
	req.Header["Content-Type"] = r.Header["Content-Type"]
	req.Header["Authorization"] = l.upstream
	resp, err := l.t.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header()["Content-Type"] = resp.Header["Content-Type"]
	// A known length goes with the answer, as ReverseProxy sends it:
	// dropped, every answer would be chunked and end in a write of its own.
	if resp.ContentLength >= 0 {
		w.Header()["Content-Length"] = []string{strconv.FormatInt(resp.ContentLength, 10)}
	}
	w.WriteHeader(resp.StatusCode)
	l.copyOut(w, resp.Body)
}

// copyOut relays the answer through a pooled buffer, flushing each read so
// a stream's events leave as they arrive.
func (l *leanRelay) copyOut(w http.ResponseWriter, body io.Reader) {
	buf := l.copies.Get().(*[]byte)
	defer l.copies.Put(buf)
	flusher, _ := w.(http.Flusher)
	for {
		n, err := body.Read(*buf)
		if n > 0 {
			if _, werr := w.Write((*buf)[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil { // io.EOF included
			return
		}
	}
}

// leanBody is a request body read whole into a pooled buffer. The
// Transport may close the body it was given after RoundTrip has returned,
// so the buffer goes back to the pool only when the handler and every body
// handed out are done with it.
type leanBody struct {
	pool  *sync.Pool
	buf   []byte
	refs  atomic.Int32
	first bodyReader // the request's own body, reused with the buffer
	// getBody is b.retry, bound once rather than per request.
	getBody func() (io.ReadCloser, error)
}

func newLeanBody(pool *sync.Pool) *leanBody {
	b := &leanBody{pool: pool, buf: make([]byte, 0, 4<<10)}
	b.first.b = b
	b.getBody = b.retry
	return b
}

// fill reads r into the buffer. The handler holds one reference, the
// request's body (open) another.
func (b *leanBody) fill(r io.Reader) error {
	b.refs.Store(1)
	buf := bytes.NewBuffer(b.buf[:0])
	_, err := buf.ReadFrom(io.LimitReader(r, maxLeanBody+1))
	b.buf = buf.Bytes()
	if err == nil && len(b.buf) > maxLeanBody {
		err = fmt.Errorf("body over %d bytes", maxLeanBody)
	}
	return err
}

// open is the request's body.
func (b *leanBody) open() io.ReadCloser {
	b.refs.Add(1)
	b.first.Reset(b.buf)
	b.first.closed.Store(false)
	return &b.first
}

// retry is a fresh reader for the Transport to resend on a stale
// connection: rare, so it is allocated.
func (b *leanBody) retry() (io.ReadCloser, error) {
	b.refs.Add(1)
	r := &bodyReader{b: b}
	r.Reset(b.buf)
	return r, nil
}

func (b *leanBody) release() {
	if b.refs.Add(-1) == 0 {
		b.pool.Put(b)
	}
}

type bodyReader struct {
	bytes.Reader
	b      *leanBody
	closed atomic.Bool
}

func (r *bodyReader) Close() error {
	if !r.closed.Swap(true) {
		r.b.release()
	}
	return nil
}
