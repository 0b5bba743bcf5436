package h1_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

type readyWaiter interface{ WaitReady() }

// chunkServer answers every connection with a chunked stream, one chunk
// per value it receives on next, and cuts the connection (no last chunk)
// when next is closed.
func chunkServer(t *testing.T, next <-chan string) *rawServer {
	return newRawServer(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		for chunk := range next {
			if _, err := io.WriteString(c, chunkOf(chunk)); err != nil {
				return
			}
		}
	})
}

func chunkOf(s string) string {
	return string(rune("0123456789abcdef"[len(s)])) + "\r\n" + s + "\r\n"
}

// waitReadyAsync runs WaitReady and closes the returned channel when it
// returns.
func waitReadyAsync(body io.Reader) <-chan struct{} {
	done := make(chan struct{})
	go func() { body.(readyWaiter).WaitReady(); close(done) }()
	return done
}

// TestWaitReady: WaitReady blocks while the upstream sends nothing and
// returns once the next bytes (or the connection's end) have come, which
// the next Read then returns without waiting; a cut connection is reported
// by that Read as a broken body, not a clean end.
func TestWaitReady(t *testing.T) {
	next := make(chan string)
	s := chunkServer(t, next)
	c := newClient(t, 4, time.Minute)
	req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodGet, s.url+"/", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	for _, chunk := range []string{"data: 1\n\n", "data: 2\n\n"} {
		done := waitReadyAsync(resp.Body)
		select {
		case <-done:
			t.Fatal("WaitReady returned before anything was sent")
		case <-time.After(50 * time.Millisecond):
		}
		next <- chunk
		waitSignal(t, done, "WaitReady after a chunk")
		n, err := resp.Body.Read(buf)
		if err != nil || string(buf[:n]) != chunk {
			t.Fatalf("read after WaitReady: %q, %v; want %q", buf[:n], err, chunk)
		}
	}
	done := waitReadyAsync(resp.Body)
	close(next) // the server cuts the stream
	waitSignal(t, done, "WaitReady after the cut")
	if _, err := resp.Body.Read(buf); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("read after a cut: %v; want a broken body", err)
	}
	resp.Body.Close()
	waitSignal(t, waitReadyAsync(resp.Body), "WaitReady on a closed body")
}

// TestCancelWhileWaitingReady: cancelling the request ends a WaitReady,
// and the next Read reports the cancel's cause.
func TestCancelWhileWaitingReady(t *testing.T) {
	for _, tc := range cancelCases {
		t.Run(tc.name, func(t *testing.T) {
			next := make(chan string)
			s := chunkServer(t, next)
			t.Cleanup(func() { close(next) }) // before the server's cleanup, which waits for its handler
			c := newClient(t, 4, time.Minute)
			roundTrip, cancel := tc.send(t, c, s.url+"/")
			resp, err := roundTrip()
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			done := waitReadyAsync(resp.Body)
			cancel()
			waitSignal(t, done, "WaitReady after cancel")
			if _, err := resp.Body.Read(make([]byte, 64)); !errors.Is(err, tc.want) {
				t.Fatalf("read error %v does not wrap %v", err, tc.want)
			}
		})
	}
}
