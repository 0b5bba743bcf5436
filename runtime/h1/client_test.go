package h1_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/h1"
)

// guard bounds every wait in these tests. It is a failure guard, never an
// assertion: a healthy run finishes each wait in well under a millisecond.
const guard = 30 * time.Second

// server is an httptest server that counts the connections it accepts and
// the ones it sees closed.
type server struct {
	*httptest.Server
	newConns    atomic.Int32
	closedConns atomic.Int32
	closedSig   chan struct{} // poked on every close
	quit        chan struct{} // closed at cleanup so blocked handlers return
}

func newServer(t *testing.T, h func(s *server, w http.ResponseWriter, r *http.Request), configure ...func(*http.Server)) *server {
	t.Helper()
	s := &server{closedSig: make(chan struct{}, 1), quit: make(chan struct{})}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(s, w, r) }))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.newConns.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closedConns.Add(1)
			select {
			case s.closedSig <- struct{}{}:
			default:
			}
		}
	}
	for _, f := range configure {
		f(s.Config)
	}
	s.Start()
	t.Cleanup(func() {
		close(s.quit)
		s.Close()
	})
	return s
}

// waitClosed waits until the server has seen at least n connections close.
func (s *server) waitClosed(t *testing.T, n int32) {
	t.Helper()
	timeout := time.After(guard)
	for s.closedConns.Load() < n {
		select {
		case <-s.closedSig:
		case <-timeout:
			t.Fatalf("server saw %d connections close, want %d", s.closedConns.Load(), n)
		}
	}
}

func (s *server) wantNewConns(t *testing.T, want int32) {
	t.Helper()
	if got := s.newConns.Load(); got != want {
		t.Fatalf("server accepted %d connections, want %d", got, want)
	}
}

// rawServer is a listener whose connections a test serves byte by byte.
type rawServer struct {
	ln       net.Listener
	accepted atomic.Int32
	url      string
}

func newRawServer(t *testing.T, handle func(c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, url: "http://" + ln.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			c.SetDeadline(time.Now().Add(guard))
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

func newClient(t *testing.T, maxIdlePerHost int, idleTimeout time.Duration) *h1.Client {
	c := h1.New(&net.Dialer{Timeout: guard}, h1.Options{MaxIdlePerHost: maxIdlePerHost, IdleTimeout: idleTimeout})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// guardCtx is a request context that ends a hung test rather than letting
// it run into the go test timeout.
func guardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// fetch sends one request and reads its response whole.
func fetch(ctx context.Context, rt http.RoundTripper, method, url string, body io.Reader) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, "", err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func mustGet(t *testing.T, rt http.RoundTripper, url string) string {
	t.Helper()
	resp, body, err := fetch(guardCtx(t), rt, http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	return body
}

// echoN answers with the n query parameter.
func echoN(_ *server, w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "n="+r.URL.Query().Get("n"))
}

func TestSequentialRequestsShareOneConnection(t *testing.T) {
	s := newServer(t, echoN)
	c := newClient(t, 4, time.Minute)
	for i := range 100 {
		if got, want := mustGet(t, c, fmt.Sprintf("%s/?n=%d", s.URL, i)), "n="+strconv.Itoa(i); got != want {
			t.Fatalf("request %d: body %q, want %q", i, got, want)
		}
	}
	s.wantNewConns(t, 1)
}

func TestConcurrentRequestsUseAtMostOneConnectionEach(t *testing.T) {
	const workers, perWorker = 8, 50
	s := newServer(t, echoN)
	c := newClient(t, 16, time.Minute)
	ctx := guardCtx(t)
	errs := make(chan error, workers*perWorker)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				n := fmt.Sprintf("%d-%d", w, i)
				_, body, err := fetch(ctx, c, http.MethodGet, s.URL+"/?n="+n, nil)
				if err == nil && body != "n="+n {
					err = fmt.Errorf("request %s: body %q", n, body)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := s.newConns.Load(); n < 1 || n > workers {
		t.Fatalf("server accepted %d connections, want 1..%d", n, workers)
	}
}

func TestBodyClosedEarlyClosesConnection(t *testing.T) {
	s := newServer(t, func(s *server, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select { // the rest of the stream never comes
		case <-r.Context().Done():
		case <-s.quit:
		}
	})
	c := newClient(t, 4, time.Minute)
	req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodGet, s.URL+"/stream", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("first\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first\n" {
		t.Fatalf("first line %q, %v", first, err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(first); err == nil {
		t.Fatal("read after Close succeeded")
	}
	s.waitClosed(t, 1) // the client hung up mid-stream
	if got := mustGet(t, c, s.URL+"/"); got != "ok" {
		t.Fatalf("body %q", got)
	}
	s.wantNewConns(t, 2)
}

// TestConnectionCloseIsHonoured uses a server that says "Connection: close"
// yet keeps the connection open and would answer on it: only the client's
// own bookkeeping keeps it from reusing the connection.
func TestConnectionCloseIsHonoured(t *testing.T) {
	served := make(chan int, 4) // requests answered, per connection
	s := newRawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		n := 0
		defer func() { served <- n }()
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			n++
			io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	c := newClient(t, 4, time.Minute)
	for range 2 {
		if got := mustGet(t, c, s.url+"/"); got != "ok" {
			t.Fatalf("body %q", got)
		}
	}
	for i := range 2 {
		select {
		case n := <-served:
			if n != 1 {
				t.Fatalf("a connection carried %d requests, want 1", n)
			}
		case <-time.After(guard):
			t.Fatalf("connection %d was never closed by the client", i)
		}
	}
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("accepted %d connections, want 2", n)
	}
}

// TestZeroLimitsMeanNoLimit: as in net/http, zero for the idle cap and the
// idle timeout lifts the limit rather than turning pooling off.
func TestZeroLimitsMeanNoLimit(t *testing.T) {
	s := newServer(t, echoN)
	c := newClient(t, 0, 0)
	for i := 0; i < 5; i++ {
		mustGet(t, c, s.URL)
	}
	s.wantNewConns(t, 1)
}
