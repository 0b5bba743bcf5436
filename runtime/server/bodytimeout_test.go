package server

import (
	"bufio"
	"io"
	"log/slog"
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
	c := sendPartOfABody(t, s, "/v1/chat/completions", `{"model":`)
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

// TestClientLeavingMidBody: a client that closes its connection halfway
// through its body is recorded as a 499, not refused 400 invalid_json,
// and is sent nothing.
func TestClientLeavingMidBody(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/preflight"} {
		t.Run(path, func(t *testing.T) {
			lines := make(logLines, 16)
			o := testOptions(testGraph(), okUpstream())
			o.Logger = slog.New(slog.NewJSONHandler(lines, nil))
			c := sendPartOfABody(t, startOnLoopback(t, o), path, `{"model":"gpt",`)
			c.(*net.TCPConn).CloseWrite() // the body ends short of its length: the client left
			if got, _ := io.ReadAll(c); len(got) != 0 {
				t.Errorf("the client that left was sent %q", got)
			}
			for {
				select {
				case l := <-lines:
					if !strings.Contains(l, `"msg":"request"`) {
						continue
					}
					if !strings.Contains(l, `"status":499`) || strings.Contains(l, "invalid_json") {
						t.Fatalf("recorded %s", l)
					}
					return
				case <-time.After(10 * time.Second):
					t.Fatal("no request logged")
				}
			}
		})
	}
}

// sendPartOfABody opens a connection to s and sends a chat request that
// declares a 100-byte body to path, of which only part; the connection is closed
// when the test ends.
func sendPartOfABody(t *testing.T, s *Server, path, part string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.PublicAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k-default\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"+part)
	return c
}

// logLines receives each log line a JSON handler writes, dropping those
// that find it full rather than holding the server up.
type logLines chan string

func (l logLines) Write(b []byte) (int, error) {
	select {
	case l <- string(b):
	default:
	}
	return len(b), nil
}
