// Package watchdog bounds how long one blocking operation may wait, for
// streams that run as long as they make progress: an upstream body that
// goes quiet, a client that stops reading. Only the time an operation is in
// progress counts; the pauses between operations do not.
//
// Marking an operation costs a clock read and an atomic store. The timer is
// not re-armed around each operation: it wakes once per limit and looks.
package watchdog

import (
	"sync"
	"sync/atomic"
	"time"
)

// Watchdog calls expire once, when a single operation has been in progress
// for the whole limit. Begin and End bracket each operation; they may be
// called from one goroutine while the timer runs on another.
type Watchdog struct {
	limit  time.Duration
	expire func()
	// mu orders the timer's creation before the first firing reads it.
	mu    sync.Mutex
	timer *time.Timer
	// since is when the operation in progress began (see clock); 0 when
	// none is.
	since   atomic.Int64
	stopped atomic.Bool
}

// New starts a watchdog. Stop it when the stream ends.
func New(limit time.Duration, expire func()) *Watchdog {
	w := new(Watchdog)
	w.Start(limit, expire)
	return w
}

// Start starts w, a zero Watchdog, in place: for one kept inside the value
// it watches, which then costs no allocation of its own.
func (w *Watchdog) Start(limit time.Duration, expire func()) {
	w.limit, w.expire = limit, expire
	w.mu.Lock()
	w.timer = time.AfterFunc(limit, w.check)
	w.mu.Unlock()
}

// clockStart anchors clock; time.Since reads the monotonic clock.
var clockStart = time.Now()

func clock() int64 { return int64(time.Since(clockStart)) + 1 } // never 0

// Begin marks an operation starting.
func (w *Watchdog) Begin() { w.since.Store(clock()) }

// End marks it finished.
func (w *Watchdog) End() { w.since.Store(0) }

// Stop ends the watch; expire is not called after Stop returns, unless it
// was already running.
func (w *Watchdog) Stop() {
	w.stopped.Store(true)
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
}

// check runs on the timer: it expires an operation that has waited the
// whole limit, and otherwise looks again when the one in progress (or the
// next) could first have.
func (w *Watchdog) check() {
	if w.stopped.Load() {
		return
	}
	wait := w.limit
	if since := w.since.Load(); since != 0 {
		waited := time.Duration(clock() - since)
		if waited >= w.limit {
			w.stopped.Store(true)
			w.expire()
			return
		}
		wait = w.limit - waited
	}
	w.mu.Lock()
	w.timer.Reset(wait)
	w.mu.Unlock()
}
