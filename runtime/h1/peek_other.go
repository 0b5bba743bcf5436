//go:build !linux

package h1

import "net"

// peeker cannot peek portably here; a dead pooled connection is found on
// use, and a request that could not be written is sent again.
type peeker struct{}

func newPeeker(net.Conn) *peeker { return nil }

func (*peeker) peerOpen() bool { return true }

// canWait is false: a connection waits on its upstream in a read, with
// its buffer.
func (*peeker) canWait() bool { return false }

func (*peeker) wait() {}

// clientPeek cannot tell here; a client that left is found when its
// answer is written.
type clientPeek struct{}

func newClientPeek(net.Conn) clientPeek { return clientPeek{} }

func (clientPeek) hasGone() bool { return false }
