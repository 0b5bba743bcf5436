package a2a_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAgent serves h as an agent on 127.0.0.1, its URL the server's root.
func fakeAgent(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestBrokenStreamEndsWithAnErrorEvent(t *testing.T) {
	url := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"task\"}}\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	gw := startGateway(t, url)
	resp, body := gw.post(t, clientKey, `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{}}`)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, `data: {"jsonrpc":"2.0","id":1,"result"`) {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	var events []string
	for _, ev := range strings.Split(body, "\n\n") {
		if ev != "" {
			events = append(events, ev)
		}
	}
	last := events[len(events)-1]
	if len(events) != 2 || !strings.Contains(last, `"id":1,"error"`) || !strings.Contains(last, `"pistra_code":"upstream_stream_incomplete"`) {
		t.Fatalf("stream %q", body)
	}
	if gw.charged(t) != 1 {
		t.Fatalf("a stream the agent began and broke: %d charged", gw.charged(t))
	}
}

func TestStreamRefusedInItsFirstEventIsNotCharged(t *testing.T) {
	url := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": a comment first\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"bad\"}}\n\n")
	})
	gw := startGateway(t, url)
	resp, body := gw.post(t, clientKey, `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"message":"bad"`) {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if gw.charged(t) != 0 || gw.counted(t, "message", "upstream_error") != 1 {
		t.Fatalf("%d charged", gw.charged(t))
	}
}

func TestStreamThatEndsBeforeItsFirstEventIsGivenBack(t *testing.T) {
	url := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\"")
	})
	gw := startGateway(t, url)
	gw.post(t, clientKey, `{"jsonrpc":"2.0","id":"s","method":"message/stream","params":{}}`)
	if gw.charged(t) != 0 || gw.counted(t, "message", "unanswered") != 1 {
		t.Fatalf("%d charged", gw.charged(t))
	}
}

func TestUnreachableAndSlowAgentsAreGivenBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	gw := startGateway(t, "http://"+addr)
	resp, body := gw.post(t, clientKey, `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{}}`)
	// 5xx refusals of a request go out under a 200, as the gate sends
	// them (runtime/agentcall.Refuse), the status in error.data.
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"pistra_code":"upstream_unreachable","status":502`) {
		t.Fatalf("unreachable: %d %s", resp.StatusCode, body)
	}

	release := make(chan struct{})
	slowAgent := fakeAgent(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	t.Cleanup(func() { close(release) }) // before the agent's server closes, which waits for it
	slow := startGatewayWith(t, slowAgent, 50*time.Millisecond)
	resp, body = slow.post(t, clientKey, `{"jsonrpc":"2.0","id":3,"method":"message/send","params":{}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":3`) || !strings.Contains(body, "no answer within 50ms") {
		t.Fatalf("slow: %d %s", resp.StatusCode, body)
	}
	for _, g := range []*gateway{gw, slow} {
		if g.charged(t) != 0 || g.counted(t, "message", "unanswered") != 1 {
			t.Fatalf("%d charged", g.charged(t))
		}
	}
}

func TestBodiesThatAreNoCallAreRefusedUnsent(t *testing.T) {
	var sent atomic.Int32
	gw := startGateway(t, fakeAgent(t, func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
	for _, body := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"message/send"}]`,
		`{"jsonrpc":"2.0","method":"message/send"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","Method":"message/send"}`,
		`not json`,
	} {
		resp, got := gw.post(t, clientKey, body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, `"pistra_code":"invalid_rpc"`) || !strings.Contains(got, `"id":null`) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, got)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, gw.base, nil)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET of the JSON-RPC endpoint: %d", resp.StatusCode)
	}
	if sent.Load() != 0 || gw.charged(t) != 0 {
		t.Fatalf("%d sent", sent.Load())
	}
}

func TestHTTPJSONBindingGoesBelowTheAgentsURL(t *testing.T) {
	var paths []string
	gw := startGateway(t, fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/agent/rest/message:send", "/agent/rest/tasks/t1":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"task":{"id":"t1"}}`)
		default:
			http.NotFound(w, r)
		}
	})+"/agent")
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/rest/message:send", 200},
		{"GET", "/rest/tasks/t1?historyLength=2", 200},
		{"GET", "/rest/tasks/t2/../t1", 200}, // cleaned, then read: a task read
		{"POST", "/rest/tasks/t1:cancel", 404},
		{"GET", "/rest/tasks/none", 404},
	} {
		req, _ := http.NewRequest(c.method, gw.base+c.path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+clientKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
	}
	want := []string{
		"POST /agent/rest/message:send Bearer " + agentSecret, "GET /agent/rest/tasks/t1?historyLength=2 Bearer " + agentSecret,
		"GET /agent/rest/tasks/t1 Bearer " + agentSecret, "POST /agent/rest/tasks/t1:cancel Bearer " + agentSecret,
		"GET /agent/rest/tasks/none Bearer " + agentSecret,
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the agent was sent\n%s\nwant\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	// Charged: the send and two reads; the cancel is free, the 404 read
	// the agent's error.
	if gw.charged(t) != 3 || gw.counted(t, "task_read", "upstream_error") != 1 {
		t.Fatalf("%d charged", gw.charged(t))
	}
}

func TestOldCardPathIsServedFromTheNewOne(t *testing.T) {
	gw := startGateway(t, fakeAgent(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/agent-card.json" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"name":"x","url":"http://%s"}`, r.Host)
	}))
	for _, p := range []string{"/.well-known/agent.json", "/.well-known/agent-card.json"} {
		req, _ := http.NewRequest("GET", gw.base+p, nil)
		req.Header.Set("Authorization", "Bearer "+clientKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if want := `{"name":"x","url":"` + gw.base + `"}`; resp.StatusCode != 200 || string(b[:n]) != want {
			t.Errorf("%s: %d %s, want %s", p, resp.StatusCode, b[:n], want)
		}
	}
	req, _ := http.NewRequest("GET", gw.base+"/.well-known/agent-card.json", nil)
	req.Header.Set("Authorization", "Bearer "+otherKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a refused key read the card: %d", resp.StatusCode)
	}
	if gw.charged(t) != 0 || gw.counted(t, "card", "free") != 2 {
		t.Fatalf("reading the card charged %d", gw.charged(t))
	}
}
