package server

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
)

const endlessEvent = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" +
	"a fairly long piece of streamed text to fill the socket buffers quickly\"}}]}\n\n"

// TestClientThatStopsReadingIsCut: a streaming client that stops reading
// is cut once a write has blocked for the client write timeout, and the
// upstream stream it held is released.
func TestClientThatStopsReadingIsCut(t *testing.T) {
	// An event stream that never ends; closed is closed when the gateway
	// lets go of it.
	closed := make(chan struct{})
	endless := testkit.SSE(endlessEvent)
	endless.Endless, endless.Closed = true, closed
	o := testOptions(testGraph(), testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {endless}}))
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
	case <-closed:
	case <-time.After(30 * time.Second): // failure guard only
		t.Fatal("the upstream stream is still held by a client that stopped reading")
	}
}
