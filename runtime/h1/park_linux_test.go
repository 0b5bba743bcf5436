package h1

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWaitingConnectionHoldsNoBuffer: a connection holds its read buffer
// only while it reads. Waiting for the answer's head, waiting between a
// stream's events, and idle in the pool afterwards, it has given the
// buffer back; each read gets the bytes all the same.
func TestWaitingConnectionHoldsNoBuffer(t *testing.T) {
	start, events, done := make(chan struct{}), make(chan string), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		<-start // the upstream thinks before its head
		w.(http.Flusher).Flush()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			case <-done:
				return
			}
		}
	}))
	defer srv.Close()
	defer close(done) // before the server's Close, which waits for the handler
	var parkedSizes []int
	testHookParked = func(cn *conn) { parkedSizes = append(parkedSizes, cn.br.Size()) }
	defer func() { testHookParked = nil }()

	c := New(&net.Dialer{}, Options{})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	go func() { time.Sleep(20 * time.Millisecond); close(start) }()
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body := resp.Body.(*body)
	want := []string{"data: 1\n\n", "data: 2\n\n"}
	buf := make([]byte, 64)
	for _, ev := range want {
		go func() { time.Sleep(20 * time.Millisecond); events <- ev }()
		body.WaitReady()
		if body.cn.br.Size() != bufSize {
			t.Fatalf("after WaitReady the reader's buffer is %d bytes, want %d", body.cn.br.Size(), bufSize)
		}
		n, err := body.Read(buf)
		if err != nil || string(buf[:n]) != ev {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, ev)
		}
	}
	close(events)
	if rest, err := io.ReadAll(body); err != nil || len(rest) != 0 {
		t.Fatalf("the stream's end: %q, %v", rest, err)
	}
	// Parked for the head and before each event's wait.
	if len(parkedSizes) < 1+len(want) {
		t.Fatalf("parked %d times, want at least %d", len(parkedSizes), 1+len(want))
	}
	for i, n := range parkedSizes {
		if n != 0 {
			t.Errorf("wait %d: the reader held a %d-byte buffer while waiting", i, n)
		}
	}
	c.mu.Lock()
	idle := c.idle[hostPort(req.URL.Host)]
	c.mu.Unlock()
	if len(idle) != 1 || !idle[0].parked || idle[0].br.Size() != 0 {
		t.Fatalf("idle connections %d; want one, parked with no buffer", len(idle))
	}
}
