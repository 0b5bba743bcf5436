package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// serveLean serves h on a loopback listener through Server, with a
// Fallback that serves h too but marks its answers, and stops at the
// test's end.
func serveLean(t *testing.T, h http.Handler) (*Server, string) {
	t.Helper()
	return serveLeanWith(t, h, 10*time.Second, time.Minute)
}

func serveLeanWith(t *testing.T, h http.Handler, head, idle time.Duration) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Fallback", "1")
		h.ServeHTTP(w, r)
	})}
	s := &Server{Handler: h, Fallback: fb, ReadHeaderTimeout: head, IdleTimeout: idle}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Host", r.Host)
	fmt.Fprintf(w, "%s %s %s", r.URL.Path, r.URL.RawQuery, b)
}

// TestServerAnswersOnOneConnection: requests of the common shape are
// served by Server itself, one after another on one connection, with
// what net/http would send: a Content-Length for a short answer, a Date,
// a sniffed Content-Type.
func TestServerAnswersOnOneConnection(t *testing.T) {
	_, base := serveLean(t, http.HandlerFunc(echo))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	reused := 0
	for i := range 3 {
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
			if ci.Reused {
				reused++
			}
		}}
		body := fmt.Sprintf(`{"n":%d}`, i)
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			http.MethodPost, base+"/v1/x?q=1", strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "/v1/x q=1 " + body; string(got) != want {
			t.Fatalf("body %q, want %q", got, want)
		}
		switch {
		case resp.Header.Get("X-Fallback") != "":
			t.Fatal("a common request was handed to the fallback")
		case resp.ContentLength != int64(len(got)):
			t.Fatalf("Content-Length %d for %d bytes", resp.ContentLength, len(got))
		case resp.Header.Get("Date") == "", resp.Header.Get("Content-Type") != "text/plain; charset=utf-8":
			t.Fatalf("header %v", resp.Header)
		case resp.Header.Get("X-Method") != http.MethodPost || !strings.HasPrefix(resp.Header.Get("X-Host"), "127.0.0.1:"):
			t.Fatalf("the handler saw %v", resp.Header)
		}
	}
	if reused != 2 {
		t.Fatalf("%d of 2 later requests reused the connection", reused)
	}
}

// TestServerStreams: each Flush sends what was written at once, chunked.
func TestServerStreams(t *testing.T) {
	next := make(chan struct{})
	_, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			<-next
		}
	}))
	resp, err := http.Post(base+"/s", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("framing %v, want chunked", resp.TransferEncoding)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the events: %q %v", rest, err)
	}
}

// TestServerHandsOffTheRest: whatever is not of the common shape reaches
// net/http's server, which answers it as it always does, errors included.
func TestServerHandsOffTheRest(t *testing.T) {
	_, base := serveLean(t, http.HandlerFunc(echo))
	addr := strings.TrimPrefix(base, "http://")
	for _, c := range []struct{ name, req, status, body string }{
		{"chunked body", "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "200", "/c  abc"},
		{"expect", "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", "200", "/e  hi"},
		{"HTTP/1.0", "GET /o HTTP/1.0\r\n\r\n", "200", "/o  "},
		{"upgrade", "GET /u HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", "200", "/u  "},
		{"no host", "GET /n HTTP/1.1\r\nX: y\r\n\r\n", "400", ""},
		{"bad field", "GET /b HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n", "400", ""},
		{"two lengths", "POST /l HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", "400", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, c.req); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			for err == nil && resp.StatusCode < 200 { // 100 Continue first
				resp, err = http.ReadResponse(br, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			if resp.Status[:3] != c.status || c.status == "200" && (string(got) != c.body || resp.Header.Get("X-Fallback") != "1") {
				t.Fatalf("%s %q (fallback %q), want %s %q", resp.Status, got, resp.Header.Get("X-Fallback"), c.status, c.body)
			}
		})
	}
}

// TestServerNoticesAClientGone: a request whose client closes its
// connection once the body is read has its context cancelled, as
// net/http's server does.
func TestServerNoticesAClientGone(t *testing.T) {
	ended := make(chan error, 1)
	_, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if _, lean := w.(*response); !lean {
			ended <- errors.New("served by the fallback")
			return
		}
		select {
		case <-r.Context().Done():
			ended <- nil
		case <-time.After(30 * time.Second): // failure guard only
			ended <- errors.New("the context outlived its client")
		}
	}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "POST /wait HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}")
	time.Sleep(50 * time.Millisecond) // the handler is waiting
	conn.Close()
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}

// TestServerAbortHandler: panic(http.ErrAbortHandler) cuts the answer: the
// client sees it end early, not whole.
func TestServerAbortHandler(t *testing.T) {
	_, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, lean := w.(*response); !lean {
			http.Error(w, "served by the fallback", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	resp, err := http.Post(base+"/a", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read %v, want an unexpected end", err)
	}
}

// TestServerShutdownLetsRequestsFinish: Shutdown waits for the request in
// progress, which ends whole with Connection: close, and closes idle
// connections.
func TestServerShutdownLetsRequestsFinish(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		io.WriteString(w, "done")
	}))
	idle, err := http.Get(base + "/quick") // leaves an idle connection
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(idle.Body)
	idle.Body.Close()
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := (&http.Client{Transport: &http.Transport{}}).Get(base + "/slow")
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) with a request in progress", err)
	default:
	}
	close(release)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // failure guard only
		t.Fatal("Shutdown did not return once the request ended")
	}
	resp := <-got
	if resp == nil {
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "done" || !resp.Close {
		t.Fatalf("%q, close %v: want the whole answer and Connection: close", b, resp.Close)
	}
}

// TestServerAnswersBeforeALargeUnreadBody: a handler that refuses a body
// without reading it (a size limit) gets its answer to the client, which
// is still sending, rather than a reset: the connection closes after it.
func TestServerAnswersBeforeALargeUnreadBody(t *testing.T) {
	_, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.CopyN(io.Discard, r.Body, 10)
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}))
	for _, size := range []int{64 << 10, 4 << 20} { // drained, and left
		resp, err := http.Post(base+"/big", "application/json", strings.NewReader(strings.Repeat("x", size)))
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Close != (size > maxDrain) {
			t.Fatalf("%d bytes: %s, close %v", size, resp.Status, resp.Close)
		}
	}
}

// TestServerBoundsTheFirstHead: a connection that sends nothing is closed
// after the head timeout, not the idle one, as net/http closes it.
func TestServerBoundsTheFirstHead(t *testing.T) {
	_, base := serveLeanWith(t, http.HandlerFunc(echo), 100*time.Millisecond, time.Hour)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // failure guard only
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read %v, want the server's close", err)
	}
}

// TestServerFramesAsItDecides: the framing is the server's: no length on a
// 204, a length set after WriteHeader or a handler's own
// Transfer-Encoding ignored, a long answer chunked.
func TestServerFramesAsItDecides(t *testing.T) {
	_, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusNoContent)
		case "/late":
			w.WriteHeader(http.StatusOK)
			w.Header().Set("Content-Length", "99")
			io.WriteString(w, "four")
		case "/te":
			w.Header().Set("Transfer-Encoding", "identity")
			io.WriteString(w, strings.Repeat("y", 3000))
		}
	}))
	for _, c := range []struct {
		path    string
		length  int64
		chunked bool
		body    int
	}{{"/204", -1, false, 0}, {"/late", 4, false, 4}, {"/te", -1, true, 3000}} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", c.path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		conn.Close()
		chunked := len(resp.TransferEncoding) > 0
		if err != nil || len(b) != c.body || chunked != c.chunked || c.length >= 0 && resp.ContentLength != c.length ||
			c.path == "/204" && resp.Header["Content-Length"] != nil {
			t.Fatalf("%s: %d bytes (%v), length %d, chunked %v, header %v", c.path, len(b), err, resp.ContentLength, chunked, resp.Header)
		}
	}
}

// TestServerKeepsALiveClientsRequest: the watcher leaves a request alone
// while its client is there, however long the handler takes.
func TestServerKeepsALiveClientsRequest(t *testing.T) {
	_, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusInternalServerError)
		case <-time.After(4 * clientWatchEvery):
			io.WriteString(w, "ok")
		}
	}))
	resp, err := http.Post(base+"/long", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("%s %q: the request of a client still there was cancelled", resp.Status, b)
	}
}

// TestServerDropsAWrappedBody: a body the handler wrapped (as
// http.MaxBytesReader does) and left unread is still dropped by the
// server, so its bytes are never read as the next request.
func TestServerDropsAWrappedBody(t *testing.T) {
	_, base := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4)
		b := make([]byte, 4)
		io.ReadFull(r.Body, b)
		io.WriteString(w, r.URL.Path)
	}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n"
	body := strings.Repeat("x", 10) + smuggled
	fmt.Fprintf(conn, "POST /first HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%sGET /second HTTP/1.1\r\nHost: h\r\n\r\n", len(body), body)
	br := bufio.NewReader(conn)
	for _, want := range []string{"/first", "/second"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if string(got) != want {
			t.Fatalf("answered %q, want %q", got, want)
		}
	}
}
