package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echo is an upstream on loopback that answers its body back as a stream
// in two flushed halves, the second only once the test has read the first
// (release), so a relay that buffers the answer hangs instead of passing.
type echo struct {
	url     string
	calls   atomic.Int64
	release chan struct{}
}

func startEcho(t *testing.T, upstreamKey string) *echo {
	t.Helper()
	e := &echo{release: make(chan struct{}, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Authorization") != "Bearer "+upstreamKey {
			http.Error(w, fmt.Sprintf("auth %q, body error %v", r.Header.Get("Authorization"), err), http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		half := len(body) / 2
		_, _ = w.Write(body[:half])
		w.(http.Flusher).Flush()
		if r.Header.Get("X-Wait") != "" {
			select {
			case <-e.release:
			case <-time.After(10 * time.Second):
				return // the relay held the first half back: the test fails on the short answer
			}
		}
		_, _ = w.Write(body[half:])
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	e.url = "http://" + ln.Addr().String()
	return e
}

func post(url, key string, body []byte, wait bool) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if wait {
		req.Header.Set("X-Wait", "1")
	}
	return http.DefaultClient.Do(req)
}

// checkRelay holds a relay at url to what the bench's floor and reference
// must do: refuse a wrong key without reaching the upstream, relay the
// body and the answer whole with the upstream's key in the client's place,
// and pass a stream's first bytes on before the rest exists.
func checkRelay(t *testing.T, e *echo, url, key string) {
	t.Helper()
	resp, err := post(url, "wrong", []byte("{}"), false)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || e.calls.Load() != 0 {
		t.Fatalf("wrong key: status %d, upstream called %d times; want 401 and none", resp.StatusCode, e.calls.Load())
	}
	body := []byte(strings.Repeat("0123456789", 100))
	resp, err = post(url, key, body, true)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len(body)/2)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("first half of the stream (status %d): %v", resp.StatusCode, err)
	}
	e.release <- struct{}{}
	rest, err := io.ReadAll(resp.Body)
	if got := append(first, rest...); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("answer %q (%v), want the body back", got, err)
	}
}

// startLean serves a lean relay to e for the key "client" on loopback and
// returns its chat completions URL.
func startLean(t *testing.T, e *echo) string {
	t.Helper()
	l, err := newLeanRelay(e.url, "client", "up")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: l}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/v1/chat/completions"
}

func TestLeanRelay(t *testing.T) {
	e := startEcho(t, "up")
	url := startLean(t, e)
	checkRelay(t, e, url, "client")

	resp, err := post(url, "client", make([]byte, maxLeanBody+1), false)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a body over the bound: status %d, want 400", resp.StatusCode)
	}
}

// TestLeanRelayPooledBuffersDoNotCross: many requests at once, each body
// its own, each answer its own body: a buffer handed back to the pool
// while the Transport still read it would mix them (and -race would say).
func TestLeanRelayPooledBuffersDoNotCross(t *testing.T) {
	e := startEcho(t, "up")
	url := startLean(t, e)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Go(func() {
			for i := range 20 {
				body := bytes.Repeat([]byte(fmt.Sprintf("w%d-r%d;", w, i)), 1+(w*i)%900)
				resp, err := post(url, "client", body, false)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Equal(got, body) {
					errs <- fmt.Errorf("worker %d request %d: got %d bytes (%v), want its own %d", w, i, len(got), err, len(body))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNginxReference runs the bench's nginx configuration in front of the
// echo upstream, when nginx is installed.
func TestNginxReference(t *testing.T) {
	if findNginx() == "" {
		t.Skip("nginx is not installed (make bench-nginx installs it as root)")
	}
	e := startEcho(t, "bench-upstream")
	r := &rig{dir: t.TempDir(), idle: 8}
	defer r.stop()
	target, err := r.nginx("nginx", e.url+"/v1", "client", 16)
	if err != nil {
		b, _ := os.ReadFile(r.dir + "/nginx.log")
		t.Fatalf("%v\n%s", err, b)
	}
	checkRelay(t, e, target.url, "client")
}
