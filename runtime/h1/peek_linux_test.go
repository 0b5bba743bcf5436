package h1

import (
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func TestPeerOpen(t *testing.T) {
	cases := []struct {
		name string
		peer func(net.Conn) // what the server side does to the connection
		want bool
	}{
		{"quiet", nil, true},
		{"peer closed", func(c net.Conn) { c.Close() }, false},
		{"peer sent unasked", func(c net.Conn) { c.Write([]byte("HTTP/1.1 408")) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tcpPair(t)
			if tc.peer != nil {
				tc.peer(server)
				waitReadable(t, client)
			}
			if got := newPeeker(client).peerOpen(); got != tc.want {
				t.Fatalf("peerOpen = %v, want %v", got, tc.want)
			}
			// The peek consumed nothing.
			if tc.want {
				server.Write([]byte("x"))
				b := make([]byte, 1)
				if _, err := client.Read(b); err != nil || b[0] != 'x' {
					t.Fatalf("read after peek: %q, %v", b, err)
				}
			}
		})
	}
}

func TestPeerOpenWithoutSocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if !newPeeker(a).peerOpen() {
		t.Fatal("a connection without a socket to peek at must be assumed open")
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// waitReadable blocks until c has data or an end of file to read, without
// reading it, so the peek under test sees what the peer did.
func waitReadable(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		return errno != syscall.EAGAIN
	})
	if err != nil {
		t.Fatalf("waiting for the peer: %v", err)
	}
}
