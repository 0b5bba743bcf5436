// Package watchdog bounds how long one blocking operation may wait, for
// streams that run as long as they make progress: a request body that stops
// arriving, an upstream that goes quiet, a client that stops reading. Only
// the time an operation is in progress counts; the pauses between
// operations do not.
//
// Every watchdog in the process is looked at by one ticker. A timer per
// watched request (time.AfterFunc, then Stop) is an allocation and two
// updates of the runtime's timer heap; under make bench the two timers a
// streamed request had (its upstream's silence, its client's stalled
// writes) cost about 3% of pistrad's CPU. A watchdog here is
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
// called on the watch's goroutine; the Stop of its watchdog waits for it,
// so it must be quick (set a deadline in the past, fire a cut) and must
// not start or stop a watchdog.
type Expirer interface{ Expire() }

// Watchdog tells its Expirer, once, when a single operation has been in
// progress for its whole limit: at the watch's next tick after that, a
// tick being an eighth of the shortest limit started (1 ms at least),
// give or take the scheduler. The zero value is ready to Start, so one
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
	expiring   bool // its Expirer is being told, outside the lock
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
	told    sync.Cond // signalled when Expirers told outside the lock return
	ring    Watchdog  // the ring's sentinel
	running bool
	tick    time.Duration // what the shortest limit started asks for
}

func init() { watch.told.L = &watch.mu }

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
	if w.next != nil || w.expiring {
		watch.mu.Unlock()
		panic("watchdog: Start on a watchdog not stopped")
	}
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
// returns, w's Expirer is not called again, nor still running. Stopping a
// watchdog never started, or stopped already, does nothing.
func (w *Watchdog) Stop() (expired bool) {
	watch.mu.Lock()
	for w.expiring {
		watch.told.Wait()
	}
	if w.next != nil {
		w.prev.next, w.next.prev = w.next, w.prev
		w.prev, w.next = nil, nil
	}
	expired, w.expire = w.fired, nil
	watch.mu.Unlock()
	return expired
}

// run looks at every watchdog each tick, until none is started. A shorter
// tick asked for is taken up with a look at once, so no watchdog waits
// out the longer period the ticker was in.
func run(tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	var due []*Watchdog
	for {
		select {
		case <-retick:
			watch.mu.Lock()
			tick = watch.tick
			watch.mu.Unlock()
			t.Reset(tick)
		case <-t.C:
		}
		due = expired(clock(), due[:0])
		// Told outside the lock, so an Expirer that blocks (HTTP/2's
		// write deadline goes through its connection's loop) holds up its
		// own watchdog's Stop and the next look, not every Start and Stop.
		for _, w := range due {
			w.expire.Expire()
		}
		watch.mu.Lock()
		for _, w := range due {
			w.expiring = false
		}
		if len(due) > 0 {
			clear(due)
			watch.told.Broadcast()
		}
		r := &watch.ring
		if r.next == r {
			watch.running = false // a retick still pending is harmless
			watch.mu.Unlock()
			return
		}
		// The tick follows the watchdogs still started, so a short limit
		// long gone does not keep the watch looking that often.
		shortest := int64(math.MaxInt64)
		for w := r.next; w != r; w = w.next {
			shortest = min(shortest, w.limit)
		}
		if want := max(time.Duration(shortest)/ticks, minTick); want > watch.tick {
			watch.tick, tick = want, want
			t.Reset(tick)
		}
		watch.mu.Unlock()
	}
}

// expired takes out of the ring, onto due, the watchdogs whose operation
// has been in progress since before now minus their limit, marking them
// fired and being told.
func expired(now int64, due []*Watchdog) []*Watchdog {
	watch.mu.Lock()
	defer watch.mu.Unlock()
	r := &watch.ring
	for w := r.next; w != r; {
		next := w.next
		if since := w.since.Load(); since != 0 && now-since >= w.limit {
			w.prev.next, w.next.prev = w.next, w.prev
			w.prev, w.next = nil, nil
			w.fired, w.expiring = true, true
			due = append(due, w)
		}
		w = next
	}
	return due
}
