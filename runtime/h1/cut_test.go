package h1_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/h1"
)

// TestCutFiredBeforeDo: a request whose cut fired already fails with the
// cut's cause and dials nothing.
func TestCutFiredBeforeDo(t *testing.T) {
	s := newServer(t, func(_ *server, w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	c := newClient(t, 4, time.Minute)
	cut := new(h1.Cut)
	cut.Fire(errClientGone)
	cut.Fire(errors.New("a later cause")) // the first cause stays
	req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodPost, s.URL+"/", strings.NewReader("x"))
	body := &closeCount{ReadCloser: req.Body}
	req.Body = body
	if resp, err := c.Do(req, cut); !errors.Is(err, errClientGone) {
		if err == nil {
			resp.Body.Close()
		}
		t.Fatalf("Do after Fire: %v, want it to wrap %v", err, errClientGone)
	}
	if body.n.Load() == 0 {
		t.Fatal("the body was not closed")
	}
	mustGet(t, c, s.URL+"/")
	s.wantNewConns(t, 1) // only mustGet's
}

// TestBodyClosedWhenDialFails: the RoundTripper contract holds when no
// connection could be had.
func TestBodyClosedWhenDialFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newClient(t, 4, time.Minute)
	req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodPost, "http://"+addr+"/", strings.NewReader("x"))
	body := &closeCount{ReadCloser: req.Body}
	req.Body = body
	if resp, err := c.Do(req, new(h1.Cut)); err == nil {
		resp.Body.Close()
		t.Fatal("Do succeeded against a closed port")
	}
	if body.n.Load() == 0 {
		t.Fatal("the body was not closed")
	}
}
