package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
)

// TestStalledBodyTimesOut: a client that declares a body and stops sending
// it gets a 408 in its dialect once the body read timeout passes, rather
// than holding a handler for ever. A failure guard bounds the wait; the
// assertion is on what comes back, not on how long it took.
func TestStalledBodyTimesOut(t *testing.T) {
	s := startWithBodyTimeout(t, okUpstream())
	c, err := net.Dial("tcp", s.PublicAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k-default\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"code":"request_timeout"`) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

// TestBodyDeadlineIsLifted: once the body is in, the deadline no longer
// applies: an answer slower than the body timeout is still relayed.
func TestBodyDeadlineIsLifted(t *testing.T) {
	slow := testkit.JSON(200, `{"ok":true}`)
	slow.Delay = 300 * time.Millisecond
	s := startWithBodyTimeout(t, testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {slow}}))
	req, _ := http.NewRequest("POST", "http://"+s.PublicAddr()+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k-default")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(body) != `{"ok":true}` {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

// startWithBodyTimeout serves the test graph on loopback with a 100 ms body
// read timeout.
func startWithBodyTimeout(t *testing.T, up http.RoundTripper) *Server {
	o := testOptions(testGraph(), up)
	o.BodyReadTimeout = 100 * time.Millisecond
	return startOnLoopback(t, o)
}
