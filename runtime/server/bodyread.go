package server

import (
	"time"

	"github.com/pistra/pistra/runtime/watchdog"
)

// bodyRead bounds how long a client takes to send its request body. It
// lives in the pooled exchange, so watching costs no allocation: a read
// deadline set and lifted on each request's connection instead would be
// two timer updates in the runtime's poller, about 2% of pistrad's CPU per
// request under make bench. A body still arriving when the watchdog looks
// after the limit is cut: its connection's read deadline is set in the
// past, failing the read.
type bodyRead struct {
	dog watchdog.Watchdog
	rd  readDeadliner
}

// begin watches a read of the body on the connection rd bounds.
func (b *bodyRead) begin(limit time.Duration, rd readDeadliner) {
	b.rd = rd
	b.dog.Start(limit, b)
	b.dog.Begin()
}

// end stops watching and reports whether the read was cut; after end
// returns it no longer can be.
func (b *bodyRead) end() (cut bool) {
	cut = b.dog.Stop()
	b.rd = nil
	return cut
}

// Expire is the watchdog's: the read has taken the whole limit.
func (b *bodyRead) Expire() { b.rd.SetReadDeadline(aLongTimeAgo) }
