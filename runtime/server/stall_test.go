package server

import (
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"testing"
	"time"
)

// endlessStream is an upstream whose event stream never ends; closed is
// closed when the gateway lets go of it.
type endlessStream struct {
	closed   chan struct{}
	closeOne sync.Once
}

func (u *endlessStream) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if t := httptrace.ContextClientTrace(r.Context()); t != nil && t.WroteRequest != nil {
		t.WroteRequest(httptrace.WroteRequestInfo{})
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: u, ContentLength: -1, Request: r}, nil
}

var endlessEvent = []byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" +
	"a fairly long piece of streamed text to fill the socket buffers quickly\"}}]}\n\n")

func (u *endlessStream) Read(p []byte) (int, error) { return copy(p, endlessEvent), nil }

func (u *endlessStream) Close() error {
	u.closeOne.Do(func() { close(u.closed) })
	return nil
}

// TestClientThatStopsReadingIsCut: a streaming client that stops reading
// is cut once a write has blocked for the client write timeout, and the
// upstream stream it held is released.
func TestClientThatStopsReadingIsCut(t *testing.T) {
	up := &endlessStream{closed: make(chan struct{})}
	o := testOptions(testGraph(), up)
	o.ClientWriteTimeout = 100 * time.Millisecond
	s := startOnLoopback(t, o)

	c, err := net.Dial("tcp", s.PublicAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k-default\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	// The client never reads.
	select {
	case <-up.closed:
	case <-time.After(30 * time.Second): // failure guard only
		t.Fatal("the upstream stream is still held by a client that stopped reading")
	}
}
