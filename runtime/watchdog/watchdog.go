// Package watchdog bounds how long one blocking operation may wait, for
// streams that run as long as they make progress: a request body that stops
// arriving, an upstream that goes quiet, a client that stops reading. Only
// the time an operation is in progress counts; the pauses between
// operations do not.
//
// Every watchdog in the process is looked at by one ticker. A timer per
// watched request (time.AfterFunc, then Stop) is an allocation and two
// updates of the runtime's timer heap; under make bench the three watches a
// streamed request had cost about 3% of pistrad's CPU. A watchdog here is
// a few words inside the value it watches: starting and stopping one is a
// lock round trip each, and marking an operation a clock read and an
// atomic store.
package watchdog

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Expirer is told that its operation stalled for the whole limit. It is
// called on the watch's goroutine, with the watch locked: it must be
// quick (set a deadline in the past, fire a cut) and must not start or
// stop a watchdog.
type Expirer interface{ Expire() }

// Watchdog tells its Expirer, once, when a single operation has been in
// progress for its whole limit; it is told within a tick (an eighth of the
// limit) after that. The zero value is ready to Start, so one
// kept inside the value it watches costs no allocation. Begin and End
// bracket each operation; they may be called from one goroutine while the
// watch runs on another.
type Watchdog struct {
	// since is when the operation in progress began (see clock); 0 when
	// none is.
	since atomic.Int64
	// The rest is the watch's, under its lock.
	limit      int64
	expire     Expirer
	prev, next *Watchdog
	fired      bool
}

// ticks is how many times per limit the watch looks, at least.
const ticks = 8

// minTick bounds how often the watch looks, whatever the limits.
const minTick = time.Millisecond

// watch is the process's one ticker over every started watchdog, a ring
// through the watchdogs themselves. Its goroutine runs while any is
// started.
var watch struct {
	mu      sync.Mutex
	ring    Watchdog // the ring's sentinel
	running bool
	tick    time.Duration // what the shortest limit started asks for
}

// retick wakes the goroutine to take up a shorter tick at once.
var retick = make(chan struct{}, 1)

// epoch anchors the clock; time.Since reads the monotonic clock.
var epoch = time.Now()

func clock() int64 { return int64(time.Since(epoch)) + 1 } // never 0

// Start watches w, a zero or stopped Watchdog, for operations longer than
// limit (positive). Stop it before it is started again or dropped.
func (w *Watchdog) Start(limit time.Duration, e Expirer) {
	tick := max(limit/ticks, minTick)
	watch.mu.Lock()
	w.limit, w.expire, w.fired = int64(limit), e, false
	w.since.Store(0)
	r := &watch.ring
	if r.next == nil {
		r.next, r.prev = r, r
	}
	w.prev, w.next = r.prev, r
	r.prev.next, r.prev = w, w
	switch {
	case !watch.running:
		watch.running, watch.tick = true, tick
		go run(tick)
	case tick < watch.tick:
		watch.tick = tick
		select {
		case retick <- struct{}{}:
		default: // one is pending already
		}
	}
	watch.mu.Unlock()
}

// Begin marks an operation starting.
func (w *Watchdog) Begin() { w.since.Store(clock()) }

// End marks it finished.
func (w *Watchdog) End() { w.since.Store(0) }

// Stop ends the watch of w and reports whether it expired. Once Stop
// returns, w's Expirer is not called again. Stopping a watchdog never
// started, or stopped already, does nothing.
func (w *Watchdog) Stop() (expired bool) {
	watch.mu.Lock()
	if w.next != nil {
		w.prev.next, w.next.prev = w.next, w.prev
		w.prev, w.next = nil, nil
	}
	expired, w.expire = w.fired, nil
	watch.mu.Unlock()
	return expired
}

// run looks at every watchdog each tick, until none is started.
func run(tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-retick:
			watch.mu.Lock()
			tick = watch.tick
			watch.mu.Unlock()
			t.Reset(tick)
			continue
		case <-t.C:
		}
		now := clock()
		watch.mu.Lock()
		r := &watch.ring
		shortest := int64(math.MaxInt64)
		for w := r.next; w != r; {
			next := w.next
			if since := w.since.Load(); since != 0 && now-since >= w.limit {
				w.prev.next, w.next.prev = w.next, w.prev
				w.prev, w.next, w.fired = nil, nil, true
				w.expire.Expire()
			} else {
				shortest = min(shortest, w.limit)
			}
			w = next
		}
		if r.next == r {
			watch.running = false // a retick still pending is harmless
			watch.mu.Unlock()
			return
		}
		// The tick follows the watchdogs still started, so a short limit
		// long gone does not keep the watch looking that often.
		if want := max(time.Duration(shortest)/ticks, minTick); want > watch.tick {
			watch.tick, tick = want, want
			t.Reset(tick)
		}
		watch.mu.Unlock()
	}
}
