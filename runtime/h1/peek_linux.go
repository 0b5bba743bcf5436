package h1

import (
	"net"
	"syscall"
	"unsafe"
)

// peerOpen reports whether a pooled connection is still usable: nothing to
// read yet and no end-of-file from the peer. One non-blocking peek (raw:
// it cannot block), much cheaper than finding out by losing a request.
func peerOpen(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		// EAGAIN: open and quiet. 0 bytes: the peer closed. Data: the peer
		// sent something unasked, so the connection is out of step.
		open = errno == syscall.EAGAIN
		return true
	})
	return err == nil && open
}
