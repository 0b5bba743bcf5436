// Package fakepicker is an endpoint picker for tests: a real ext_proc
// gRPC server (go-control-plane's generated service) on 127.0.0.1, over
// plaintext or TLS, that answers each stream as the test's Script says
// and records what it received, so a test can hold the client to the
// protocol: the headers and body it sent, the subset hint, the processing
// mode, the endpoint it reported served, and how the stream ended. It
// behaves as the reference pickers do: the full one (the header answer
// after the whole body, then the body replayed as streamed chunks) or the
// light one (an empty answer per body chunk).
package fakepicker

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/pistra/pistra/internal/testkit"
)

// Options configure a Picker.
type Options struct {
	// PKI serves TLS with its server certificate (for 127.0.0.1 and
	// localhost); nil serves plaintext.
	PKI *testkit.PKI
	// Script answers each request; nil answers every one 503.
	Script Script
	// Light answers as the light reference picker does: an empty answer
	// to each body chunk, the body kept. Otherwise the picker answers as
	// the full one: nothing until the whole body, then the header answer
	// and the body replayed as streamed chunks, rewritten or not.
	Light bool
}

// Picker is a running fake picker.
type Picker struct {
	addr   string
	srv    *grpc.Server
	light  bool
	script atomic.Pointer[Script]

	mu      sync.Mutex
	streams []*Request
	changed chan struct{} // closed and replaced at each change of streams
}

// Start serves a picker on 127.0.0.1:0 until the test ends.
func Start(tb testing.TB, o Options) *Picker {
	tb.Helper()
	var opts []grpc.ServerOption
	if o.PKI != nil {
		creds, err := credentials.NewServerTLSFromFile(o.PKI.ServerCert, o.PKI.ServerKey)
		if err != nil {
			tb.Fatal(err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Picker{addr: ln.Addr().String(), srv: grpc.NewServer(opts...), light: o.Light, changed: make(chan struct{})}
	p.SetScript(o.Script)
	extprocv3.RegisterExternalProcessorServer(p.srv, &processor{p: p})
	go func() { _ = p.srv.Serve(ln) }()
	tb.Cleanup(p.Stop)
	return p
}

// Addr is the picker's "host:port".
func (p *Picker) Addr() string { return p.addr }

// SetScript replaces the script for the streams that decide after it.
func (p *Picker) SetScript(s Script) {
	if s == nil {
		s = func(Request) Reply { return Immediate(503, "no endpoints") }
	}
	p.script.Store(&s)
}

// Stop takes the picker down: its listener and connections close, its
// streams end. Stopping again does nothing.
func (p *Picker) Stop() { p.srv.Stop() }

// Requests is a copy of what each stream received so far, in the order
// the streams opened.
func (p *Picker) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Request, len(p.streams))
	for i, r := range p.streams {
		out[i] = r.clone()
	}
	return out
}

// WaitEnded waits (at most 5 s) until n streams have ended and returns
// what they received.
func (p *Picker) WaitEnded(tb testing.TB, n int) []Request {
	tb.Helper()
	deadline := time.After(5 * time.Second)
	for {
		p.mu.Lock()
		ended, changed := 0, p.changed
		for _, r := range p.streams {
			if r.Ended {
				ended++
			}
		}
		p.mu.Unlock()
		if ended >= n {
			return p.Requests()
		}
		select {
		case <-changed:
		case <-deadline:
			tb.Fatalf("fake picker: %d of %d streams ended after 5s", ended, n)
		}
	}
}

// open records a new stream.
func (p *Picker) open() *Request {
	r := &Request{Header: map[string][]string{}}
	p.update(func() { p.streams = append(p.streams, r) })
	return r
}

// update changes what is recorded under the lock and wakes WaitEnded.
func (p *Picker) update(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
	close(p.changed)
	p.changed = make(chan struct{})
}

func (r *Request) clone() Request {
	c := *r
	c.Header = make(map[string][]string, len(r.Header))
	for k, v := range r.Header {
		c.Header[k] = slices.Clone(v)
	}
	c.Body, c.Subset = slices.Clone(r.Body), slices.Clone(r.Subset)
	return c
}
