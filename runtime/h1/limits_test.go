package h1_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/h1"
)

// limitServer answers GET /huge with a head of 2 MiB of headers, GET
// /continues with twenty 100 Continue heads before its answer, GET
// /five with five of them, and anything else with "ok".
func limitServer(t *testing.T) *rawServer {
	return newRawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			var head strings.Builder
			switch req.URL.Path {
			case "/huge":
				head.WriteString("HTTP/1.1 200 OK\r\n")
				line := "X-Filler: " + strings.Repeat("a", 1000) + "\r\n"
				for head.Len() < 2<<20 {
					head.WriteString(line)
				}
			case "/continues", "/five":
				n := 20
				if req.URL.Path == "/five" {
					n = h1.Max1xx
				}
				head.WriteString(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", n))
				head.WriteString("HTTP/1.1 200 OK\r\n")
			default:
				head.WriteString("HTTP/1.1 200 OK\r\n")
			}
			head.WriteString("Content-Length: 2\r\n\r\nok")
			if _, err := io.WriteString(c, head.String()); err != nil {
				return // the client hung up on the head, as it should
			}
		}
	})
}

// TestHeaderBytesCapped: a 2 MiB response head is refused with
// ErrHeaderTooLarge, and its connection is closed rather than reused.
func TestHeaderBytesCapped(t *testing.T) {
	s := limitServer(t)
	c := newClient(t, 4, time.Minute)
	ctx := guardCtx(t)
	mustGet(t, c, s.url+"/") // one pooled connection
	_, _, err := fetch(ctx, c, http.MethodGet, s.url+"/huge", nil)
	if !errors.Is(err, h1.ErrHeaderTooLarge) {
		t.Fatalf("a 2 MiB head: %v, want ErrHeaderTooLarge", err)
	}
	if !strings.Contains(err.Error(), "1048576") {
		t.Errorf("the error does not state the limit: %v", err)
	}
	if got := mustGet(t, c, s.url+"/"); got != "ok" {
		t.Fatalf("after the refusal: %q", got)
	}
	// The refused exchange had the pooled connection; the next one dialled.
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("accepted %d connections, want 2", n)
	}
}

// TestHeaderLimitIsConfigurable: a head within the default is refused
// under a smaller limit, and one within the limit passes.
func TestHeaderLimitIsConfigurable(t *testing.T) {
	s := limitServer(t)
	c := h1.New(&net.Dialer{Timeout: guard}, h1.Options{MaxHeaderBytes: 64})
	t.Cleanup(c.CloseIdleConnections)
	if _, _, err := fetch(guardCtx(t), c, http.MethodGet, s.url+"/continues", nil); !errors.Is(err, h1.ErrHeaderTooLarge) {
		t.Fatalf("heads over 64 bytes together: %v, want ErrHeaderTooLarge", err)
	}
	c = h1.New(&net.Dialer{Timeout: guard}, h1.Options{MaxHeaderBytes: 256})
	t.Cleanup(c.CloseIdleConnections)
	if got := mustGet(t, c, s.url+"/"); got != "ok" {
		t.Fatalf("a small head under a small limit: %q", got)
	}
}

// TestInformationalResponsesBounded: twenty 100 Continue heads before the
// answer are refused after Max1xx of them; Max1xx pass.
func TestInformationalResponsesBounded(t *testing.T) {
	s := limitServer(t)
	c := newClient(t, 4, time.Minute)
	if got := mustGet(t, c, s.url+"/five"); got != "ok" {
		t.Fatalf("after %d 100 Continue: %q", h1.Max1xx, got)
	}
	_, _, err := fetch(guardCtx(t), c, http.MethodGet, s.url+"/continues", nil)
	if !errors.Is(err, h1.ErrTooMany1xx) {
		t.Fatalf("twenty 100 Continue: %v, want ErrTooMany1xx", err)
	}
	mustGet(t, c, s.url+"/")
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("accepted %d connections, want 2: the refused one is not reused", n)
	}
}

// TestReaperClosesIdleConnections: with no request after it, an idle
// connection is closed once it has sat idle for the idle timeout, and
// not before.
func TestReaperClosesIdleConnections(t *testing.T) {
	const idle = 200 * time.Millisecond
	s := newServer(t, echoN)
	c := newClient(t, 4, idle)
	start := time.Now()
	mustGet(t, c, s.URL+"/?n=1")
	before := time.Now()
	mustGet(t, c, s.URL+"/?n=2") // the same connection, idle again from here
	s.waitClosed(t, 1)
	if since := time.Since(before); since < idle {
		t.Fatalf("closed %v after it went idle, before the idle timeout %v", since, idle)
	}
	s.wantNewConns(t, 1)
	// The reaper runs again for connections pooled after it emptied the pool.
	mustGet(t, c, s.URL+"/?n=3")
	s.waitClosed(t, 2)
	s.wantNewConns(t, 2)
	t.Logf("two idle connections reaped in %v", time.Since(start))
}

// TestCloseIdleConnectionsTo closes the pooled connections to the hosts
// named, whichever way the URL spells the port, and keeps the others.
func TestCloseIdleConnectionsTo(t *testing.T) {
	dropped, kept := newServer(t, echoN), newServer(t, echoN)
	c := newClient(t, 4, time.Minute)
	mustGet(t, c, dropped.URL)
	mustGet(t, c, kept.URL)
	host := strings.TrimPrefix(dropped.URL, "http://")
	c.CloseIdleConnectionsTo([]string{host, "other.test"})
	dropped.waitClosed(t, 1)
	mustGet(t, c, kept.URL)
	kept.wantNewConns(t, 1)
	if n := kept.closedConns.Load(); n != 0 {
		t.Fatalf("%d connections to the kept host closed", n)
	}
}
