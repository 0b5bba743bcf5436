package h1

import (
	"net"
	"syscall"
	"unsafe"
)

// peeker asks a pooled connection whether it is still usable. It is made
// once per connection, so a peek allocates nothing.
type peeker struct {
	rc    syscall.RawConn // nil: no socket to peek at
	peek  func(fd uintptr) bool
	ready func(fd uintptr) bool // readyCheck, bound once
	open  bool                  // the last peek's answer
	woken bool                  // wait: the poller has woken it
}

func newPeeker(nc net.Conn) *peeker {
	p := new(peeker)
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			p.rc, p.peek, p.ready = rc, p.look, p.readyCheck
		}
	}
	return p
}

// peerOpen reports whether the connection is still usable: nothing to
// read yet and no end-of-file from the peer. One non-blocking peek (raw:
// it cannot block), much cheaper than finding out by losing a request.
func (p *peeker) peerOpen() bool {
	if p.rc == nil {
		return true
	}
	p.open = false
	err := p.rc.Read(p.peek)
	return err == nil && p.open
}

// canWait reports whether wait can wait on the socket.
func (p *peeker) canWait() bool { return p.rc != nil }

// wait blocks until the socket has something for a read (bytes, the
// peer's end, an error), reading nothing: one peek, then the poller. A
// spurious wake is waited out by the read that follows, as any read's is;
// a failure (the deadline an abort sets) is that read's to meet.
func (p *peeker) wait() {
	p.woken = false
	_ = p.rc.Read(p.ready)
}

func (p *peeker) readyCheck(fd uintptr) bool {
	if p.woken {
		return true
	}
	p.woken = true
	p.look(fd)
	return !p.open // EAGAIN: nothing yet, wait on the poller
}

func (p *peeker) look(fd uintptr) bool {
	_, errno := peekByte(fd)
	// EAGAIN: open and quiet. 0 bytes: the peer closed. Data: the peer
	// sent something unasked, so the connection is out of step.
	p.open = errno == syscall.EAGAIN
	return true
}

// clientPeek tells whether a server's client has gone, without reading:
// one non-blocking peek.
type clientPeek struct {
	rc syscall.RawConn // nil: cannot tell
}

func newClientPeek(nc net.Conn) clientPeek {
	var p clientPeek
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			p.rc = rc
		}
	}
	return p
}

// hasGone reports whether the client has closed its side or the connection
// failed. Bytes waiting (a next request sent early) mean it is still there.
// It peeks through Control, which takes none of the connection's locks or
// deadlines: the connection's goroutine may be blocked reading it, and a
// deadline set to cut a read says nothing of the client.
func (p *clientPeek) hasGone() bool {
	if p.rc == nil {
		return false
	}
	gone := false
	err := p.rc.Control(func(fd uintptr) {
		n, errno := peekByte(fd)
		gone = errno == 0 && n == 0 || errno != 0 && errno != syscall.EAGAIN && errno != syscall.EINTR
	})
	return err == nil && gone // closed here: the request is over already
}

// peekByte looks at the socket's next byte without taking it or waiting:
// n is 1 when there is one, 0 at the peer's end; errno EAGAIN when there is
// nothing yet.
func peekByte(fd uintptr) (n uintptr, errno syscall.Errno) {
	var b [1]byte
	n, _, errno = syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return n, errno
}
