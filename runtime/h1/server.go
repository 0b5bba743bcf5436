package h1

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pistra/pistra/runtime/watchdog"
)

// Server serves HTTP/1.1 on a cleartext listener. It reads the common
// request itself (HTTP/1.1, a body framed by Content-Length or none, no
// Upgrade, Expect, Transfer-Encoding, Trailer or Pragma, the head within
// its 4 KiB buffer) and answers it through a lean response writer: the
// head written straight from the handler's header map, no per-request
// goroutine, no deadline updates. Every other connection, from its first
// unread byte on, it hands to Fallback, net/http's server, on an
// in-process listener: WebSocket upgrades, odd framing, HTTP/1.0 and
// malformed requests keep net/http's own handling, errors included.
//
// As with net/http, a handler must not use its ResponseWriter, the
// writer's header map or the request's body once it has returned: the
// connection's next request reuses the writer and its map.
//
// net/http's server side was a fifth to a quarter of a lean Go relay's CPU
// per request under make bench; what it spends per request that this
// server does not is a background-read goroutine with two deadline
// updates, a header Clone and sort on every answer, and a string per
// header line.
type Server struct {
	Handler http.Handler
	// Fallback serves the connections handed over; its Handler should be
	// Handler. Its own timeouts apply to them.
	Fallback *http.Server
	// ReadHeaderTimeout bounds a request's head from its first byte;
	// IdleTimeout the wait for the next request. Zero: no bound.
	ReadHeaderTimeout, IdleTimeout time.Duration

	mu      sync.Mutex
	ln      net.Listener
	conns   map[*serverConn]struct{}
	handoff *connListener
	closing atomic.Bool
	ctx     context.Context // every request's context derives from it
	stop    context.CancelFunc
	quit    chan struct{} // closed once everything Serve started is to stop
	endOnce sync.Once
}

// Serve accepts connections on ln until Shutdown or Close, then returns
// http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() { // Shutdown or Close came first
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln, s.conns = ln, map[*serverConn]struct{}{}
	s.handoff = newConnListener(ln.Addr())
	s.ctx, s.stop = context.WithCancel(context.WithValue(context.Background(), http.ServerContextKey, s.Fallback))
	s.quit = make(chan struct{})
	s.mu.Unlock()
	go func() { _ = s.Fallback.Serve(s.handoff) }()
	go s.watchClients()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			if retryAccept(err) { // as net/http: wait, then accept again
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			s.Close()
			return err
		}
		backoff = 0
		sc := s.newConn(c)
		if sc == nil {
			c.Close()
			continue
		}
		go sc.serve()
	}
}

// retryAccept reports whether an accept failed for a while only: a
// timeout, or the process or system out of file descriptors, which
// closing connections frees.
func retryAccept(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED)
}

func (s *Server) newConn(c net.Conn) *serverConn {
	sc := &serverConn{s: s, c: c, peek: newClientPeek(c)}
	sc.ctx = context.WithValue(s.ctx, http.LocalAddrContextKey, c.LocalAddr())
	sc.remote = c.RemoteAddr().String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return nil
	}
	s.conns[sc] = struct{}{}
	return sc
}

func (s *Server) forget(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
}

// Shutdown stops accepting, closes idle connections, lets each active one
// finish its request and close, and waits for them (and Fallback's) until
// ctx ends; then it returns ctx's error, leaving Close to the caller.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return s.Fallback.Shutdown(ctx)
	}
	ln.Close()
	fb := make(chan error, 1)
	go func() { fb <- s.Fallback.Shutdown(ctx) }()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !s.closeIdle() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	s.end()
	return <-fb
}

// end stops what Serve started beside the accept loop, once.
func (s *Server) end() {
	s.endOnce.Do(func() {
		s.handoff.Close()
		s.stop()
		close(s.quit)
	})
}

// closeIdle closes the connections waiting for a request and reports
// whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sc := range s.conns {
		if sc.idle.Load() {
			sc.c.Close()
		}
	}
	return len(s.conns) == 0
}

// Close closes the listener and every connection at once, Fallback's too.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing.Store(true)
	started := s.ln != nil
	if started {
		s.ln.Close()
	}
	for sc := range s.conns {
		sc.c.Close()
	}
	s.mu.Unlock()
	if started {
		s.end()
	}
	return s.Fallback.Close()
}

// clientWatchEvery is how often the server looks for clients gone from
// the requests in progress. net/http learns it from a read parked on every
// such connection, a goroutine and two deadline updates per request; one
// look here is a non-blocking peek per request in progress, and a client
// that leaves is noticed within this.
const clientWatchEvery = 100 * time.Millisecond

// watchClients cancels the context of a request whose client has gone:
// its connection, read to the end of the request, has reached its end or
// failed. The peeks run outside the server's lock, and without the
// connection's read lock (RawConn.Control), which the connection's own
// goroutine holds while it waits for the next request.
func (s *Server) watchClients() {
	t := time.NewTicker(clientWatchEvery)
	defer t.Stop()
	var watched []*serverConn
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.mu.Lock()
		for sc := range s.conns {
			if sc.watched.Load() {
				watched = append(watched, sc)
			}
		}
		s.mu.Unlock()
		for _, sc := range watched {
			if sc.peek.hasGone() {
				sc.leave()
			}
		}
		clear(watched)
		watched = watched[:0]
	}
}

// serverConn is one client connection served by Server.
type serverConn struct {
	s      *Server
	c      net.Conn
	ctx    context.Context
	remote string
	br     *bufio.Reader
	bw     *bufio.Writer
	peek   clientPeek
	// idle: waiting for a request (Shutdown may close it); watched: a
	// request is in progress with its body read, so the connection has
	// nothing more to say unless the client leaves.
	idle, watched atomic.Bool
	// cancel ends the request in progress's context; under cancelMu, as
	// the watch calls it.
	cancelMu sync.Mutex
	cancel   context.CancelFunc
	// The waits for a request and for its head, under the server's
	// timeouts: an expiry sets a past read deadline, failing the read.
	idleDog, headDog watchdog.Watchdog
	timedOut         atomic.Bool
	// linger: the client may still be sending a body left unread, so the
	// close waits for it to read the answer first.
	linger bool
	res    response
	// body is the request in progress's body, nil when it has none: what
	// the server drains or closes on, whatever the handler put in its place.
	body *reqBody
	// req is the template parseRequest fills (see there).
	req http.Request
}

var (
	serverReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	serverWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// serve reads and answers requests until the connection ends, closes, or
// is handed to Fallback.
func (sc *serverConn) serve() {
	s := sc.s
	sc.br = serverReaders.Get().(*bufio.Reader)
	sc.br.Reset(sc.c)
	sc.bw = serverWriters.Get().(*bufio.Writer)
	sc.bw.Reset(sc.c)
	if s.IdleTimeout > 0 {
		sc.idleDog.Start(s.IdleTimeout, sc)
	}
	if s.ReadHeaderTimeout > 0 {
		sc.headDog.Start(s.ReadHeaderTimeout, sc)
	}
	handed := false
	defer func() {
		sc.idleDog.Stop()
		sc.headDog.Stop()
		s.forget(sc)
		if sc.linger {
			sc.closeWriteAndWait()
		}
		if !handed {
			sc.c.Close()
		}
		sc.br.Reset(nil)
		serverReaders.Put(sc.br)
		sc.bw.Reset(nil)
		serverWriters.Put(sc.bw)
	}()
	// A new connection's first request is served even once Shutdown has
	// begun, as net/http serves it.
	for first := true; first || !s.closing.Load(); first = false {
		if sc.awaitRequest(first) != nil {
			return
		}
		raw, ok := peekHead(sc.br)
		sc.headDog.End()
		if sc.timedOut.Load() {
			return
		}
		if !ok || !sc.parseRequest(raw) {
			handed = sc.handOff()
			return
		}
		sc.br.Discard(len(raw))
		if !sc.serveRequest() {
			return
		}
	}
}

// awaitRequest waits for a request's first byte and starts the head's
// watchdog, which the caller ends once the head is read. The first
// request's head is bounded from the connection's start, as net/http
// bounds it; a later one's from its first byte, the wait before it by the
// idle timeout, during which Shutdown may close the connection.
func (sc *serverConn) awaitRequest(first bool) error {
	if first {
		sc.headDog.Begin()
		_, err := sc.br.Peek(1)
		return err
	}
	sc.idle.Store(true)
	sc.idleDog.Begin()
	_, err := sc.br.Peek(1)
	sc.idleDog.End()
	sc.idle.Store(false)
	sc.headDog.Begin()
	return err
}

// Expire is the idle and head watchdogs': the wait took too long.
func (sc *serverConn) Expire() {
	sc.timedOut.Store(true)
	sc.c.SetReadDeadline(aLongTimeAgo)
}

// handOff gives the connection, with what is buffered of it, to Fallback.
// It reports false when Fallback no longer takes connections.
func (sc *serverConn) handOff() bool {
	buffered, _ := sc.br.Peek(sc.br.Buffered())
	pc := &prefixConn{Conn: sc.c, prefix: append([]byte(nil), buffered...)}
	return sc.s.handoff.give(pc)
}

// lingerFor is how long a connection closed with a request body unread
// stays half open: net/http's rstAvoidanceDelay.
const lingerFor = 500 * time.Millisecond

// closeWriteAndWait sends the client a FIN and waits a little, so it reads
// the answer before the close resets the connection.
func (sc *serverConn) closeWriteAndWait() {
	if cw, ok := sc.c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		time.Sleep(lingerFor)
	}
}

// leave ends the request in progress: its client has gone.
func (sc *serverConn) leave() {
	sc.cancelMu.Lock()
	if sc.cancel != nil {
		sc.cancel()
	}
	sc.cancelMu.Unlock()
}
