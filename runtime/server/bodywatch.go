package server

import (
	"sync"
	"time"
)

// bodyWatch bounds how long clients take to send their request bodies,
// with one ticker for the whole server. A read deadline set and lifted on
// each request's connection costs two timer updates in the runtime's
// poller, about 2% of pistrad's CPU per request under make bench; a
// watched read costs a clock read and two lock round trips. A body still
// arriving between limit and limit+limit/bodyTicks after its read began
// is cut: its connection's read deadline is set in the past, failing the
// read.
type bodyWatch struct {
	limit time.Duration
	mu    sync.Mutex
	// reading holds the reads in progress; a read's slot lives in its
	// pooled exchange, so watching allocates nothing.
	reading map[*bodyRead]struct{}
	once    sync.Once
	stop    chan struct{}
	stopped sync.Once
}

// bodyTicks is how many times per limit the watch looks.
const bodyTicks = 4

// bodyRead is one request body's read, watched.
type bodyRead struct {
	rd    readDeadliner
	since time.Time
	cut   bool
}

func newBodyWatch(limit time.Duration) *bodyWatch {
	return &bodyWatch{limit: limit, reading: make(map[*bodyRead]struct{}), stop: make(chan struct{})}
}

// begin watches the body read r, on the connection rd bounds.
func (b *bodyWatch) begin(r *bodyRead, rd readDeadliner) {
	b.once.Do(func() { go b.run() })
	since := time.Now()
	b.mu.Lock()
	r.rd, r.since, r.cut = rd, since, false
	b.reading[r] = struct{}{}
	b.mu.Unlock()
}

// end stops watching r. It reports whether r was cut; after end returns
// it no longer can be.
func (b *bodyWatch) end(r *bodyRead) (cut bool) {
	b.mu.Lock()
	delete(b.reading, r)
	cut, r.rd = r.cut, nil
	b.mu.Unlock()
	return cut
}

func (b *bodyWatch) run() {
	t := time.NewTicker(max(b.limit/bodyTicks, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		b.mu.Lock()
		for r := range b.reading {
			if now.Sub(r.since) >= b.limit {
				r.rd.SetReadDeadline(aLongTimeAgo)
				r.cut = true
				delete(b.reading, r)
			}
		}
		b.mu.Unlock()
	}
}

// close stops the ticker (Shutdown may run more than once).
func (b *bodyWatch) close() { b.stopped.Do(func() { close(b.stop) }) }
