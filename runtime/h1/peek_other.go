//go:build !linux

package h1

import "net"

// peerOpen cannot peek portably here; a dead pooled connection is found on
// use, and a request that could not be written is sent again.
func peerOpen(net.Conn) bool { return true }
