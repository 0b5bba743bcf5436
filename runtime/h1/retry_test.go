package h1

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var errBroken = errors.New("broken pipe (test)")

// brokenConn is a pooled connection the peer dropped unseen: it passes the
// liveness peek (it has no socket to peek at) and fails on the first write.
type brokenConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *brokenConn) Write([]byte) (int, error) { return 0, errBroken }

func (c *brokenConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// onlyReader hides a reader's type so http.NewRequest sets no GetBody.
type onlyReader struct{ io.Reader }

func TestRetryWhenNothingWasWritten(t *testing.T) {
	var (
		mu       sync.Mutex
		received []string
	)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, r.Method+" "+string(b))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer s.Close()
	cases := []struct {
		name     string
		method   string
		body     io.Reader
		retried  bool
		received []string
	}{
		{"replayable body", http.MethodPost, strings.NewReader("payload"), true, []string{"POST payload"}},
		{"no body", http.MethodGet, nil, true, []string{"GET "}},
		{"body without GetBody", http.MethodPost, onlyReader{strings.NewReader("payload")}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			received = nil
			mu.Unlock()
			c := New(&net.Dialer{}, Options{MaxIdlePerHost: 4, IdleTimeout: time.Minute})
			defer c.CloseIdleConnections()
			broken := poolBroken(t, c, s.Listener.Addr().String())
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, tc.method, s.URL+"/", tc.body)
			if _, ok := tc.body.(onlyReader); ok {
				req.ContentLength = int64(len("payload"))
			}
			resp, err := c.RoundTrip(req)
			if tc.retried {
				if err != nil {
					t.Fatalf("not retried: %v", err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != "ok" {
					t.Fatalf("body %q, %v", b, err)
				}
			} else if !errors.Is(err, errBroken) {
				t.Fatalf("error %v, want one wrapping %v", err, errBroken)
			}
			if !broken.closed.Load() {
				t.Error("the broken connection was not closed")
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(received, "|") != strings.Join(tc.received, "|") {
				t.Fatalf("server received %q, want %q", received, tc.received)
			}
		})
	}
}

func poolBroken(t *testing.T, c *Client, addr string) *brokenConn {
	a, b := net.Pipe()
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	bc := &brokenConn{Conn: a}
	cn := newConn(bc, addr)
	cn.idleSince = time.Now()
	c.idle[addr] = append(c.idle[addr], cn)
	return bc
}
