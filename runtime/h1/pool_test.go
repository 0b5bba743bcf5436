package h1_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestServerClosedIdleConnection has the server drop each connection right
// after answering, with no "Connection: close" to warn the client. The
// next request must find the pooled connection dead before sending on it.
func TestServerClosedIdleConnection(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only linux peeks at pooled connections")
	}
	type received struct {
		body string
		err  error
	}
	got := make(chan received, 8)
	s := newRawServer(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			got <- received{err: err}
			return
		}
		b, err := io.ReadAll(req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.Close()
		got <- received{string(b), err}
	})
	c := newClient(t, 4, time.Minute)
	ctx := guardCtx(t)
	for i := range 4 {
		want := fmt.Sprintf("request %d", i)
		resp, body, err := fetch(ctx, c, http.MethodPost, s.url+"/", strings.NewReader(want))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.StatusCode != http.StatusOK || body != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		// The server has closed the connection before the next request.
		select {
		case r := <-got:
			if r.err != nil || r.body != want {
				t.Fatalf("server got %q, %v; want %q", r.body, r.err, want)
			}
		case <-time.After(guard):
			t.Fatal("server never answered")
		}
	}
	if n := s.accepted.Load(); n != 4 {
		t.Fatalf("accepted %d connections, want 4", n)
	}
	select {
	case r := <-got:
		t.Fatalf("a request arrived twice or broken: %q, %v", r.body, r.err)
	default:
	}
}

func TestServerIdleTimeout(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only linux peeks at pooled connections")
	}
	s := newServer(t, echoN, func(hs *http.Server) { hs.IdleTimeout = time.Millisecond })
	c := newClient(t, 4, time.Minute)
	for i := range 3 {
		if got := mustGet(t, c, s.URL+"/?n=1"); got != "n=1" {
			t.Fatalf("request %d: body %q", i, got)
		}
		s.waitClosed(t, int32(i+1))
	}
	s.wantNewConns(t, 3)
}

func TestIdleTimeoutRetiresPooledConnections(t *testing.T) {
	s := newServer(t, echoN)
	c := newClient(t, 4, time.Nanosecond)
	for i := range 3 {
		if got := mustGet(t, c, s.URL+"/?n=1"); got != "n=1" {
			t.Fatalf("request %d: body %q", i, got)
		}
	}
	s.wantNewConns(t, 3)
	s.waitClosed(t, 2) // the stale ones were closed, not leaked
}

func TestMaxIdlePerHost(t *testing.T) {
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	s := newServer(t, func(s *server, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-s.quit:
			}
		}
		io.WriteString(w, "ok")
	})
	c := newClient(t, 1, time.Minute)
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, _, err := fetch(guardCtx(t), c, http.MethodGet, s.URL+"/hold", nil)
			done <- err
		}()
	}
	// Both requests are in flight at once, so each has its own connection.
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(guard):
			t.Fatal("requests never arrived")
		}
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	s.wantNewConns(t, 2)
	s.waitClosed(t, 1) // one of the two did not fit in the pool
	for range 2 {
		mustGet(t, c, s.URL+"/")
	}
	s.wantNewConns(t, 2) // the kept one served both
	if n := s.closedConns.Load(); n != 1 {
		t.Fatalf("%d connections closed, want 1", n)
	}
}

func TestCloseIdleConnections(t *testing.T) {
	s := newServer(t, echoN)
	c := newClient(t, 4, time.Minute)
	mustGet(t, c, s.URL+"/")
	c.CloseIdleConnections()
	s.waitClosed(t, 1)
	mustGet(t, c, s.URL+"/")
	s.wantNewConns(t, 2)
}
