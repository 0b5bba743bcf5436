package watchdog

import (
	"sync"
	"testing"
	"time"
)

// expiries counts the times a watchdog told it, with when the first came.
type expiries struct {
	ch chan time.Time
}

func newExpiries() *expiries { return &expiries{ch: make(chan time.Time, 16)} }

func (e *expiries) Expire() { e.ch <- time.Now() }

// wait returns when the first expiry came, failing after a guard that
// only a broken watch reaches.
func (e *expiries) wait(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-e.ch:
		return at
	case <-time.After(30 * time.Second):
		t.Fatal("a stalled operation never expired")
		return time.Time{}
	}
}

// TestExpiresOnlyOnAStalledOperation: pauses between operations do not
// count; an operation that stays in progress for the limit expires once,
// not before the limit. Sleeps only create the situations; the assertions
// are on what happened.
func TestExpiresOnlyOnAStalledOperation(t *testing.T) {
	const limit = 100 * time.Millisecond
	e := newExpiries()
	var w Watchdog
	w.Start(limit, e)
	defer w.Stop()
	for range 3 {
		time.Sleep(3 * limit) // idle between operations
		w.Begin()
		w.End()
	}
	if len(e.ch) != 0 {
		t.Fatal("expired while no operation was in progress")
	}
	began := time.Now()
	w.Begin()
	if waited := e.wait(t).Sub(began); waited < limit {
		t.Fatalf("expired after %v, before the %v limit", waited, limit)
	}
	time.Sleep(3 * limit)
	if len(e.ch) != 0 {
		t.Errorf("expired %d more times", len(e.ch))
	}
	if !w.Stop() {
		t.Error("Stop did not report the expiry")
	}
}

// TestStopPreventsExpiry: after Stop, a stalled operation is not reported,
// and a watchdog stopped in time reports no expiry.
func TestStopPreventsExpiry(t *testing.T) {
	const limit = 10 * time.Millisecond
	e := newExpiries()
	var w Watchdog
	w.Start(limit, e)
	w.Begin()
	if w.Stop() {
		t.Fatal("a watchdog stopped at once reported an expiry")
	}
	time.Sleep(5 * limit)
	if len(e.ch) != 0 {
		t.Fatal("expired after Stop")
	}
	if w.Stop() {
		t.Fatal("a second Stop reported an expiry")
	}
}

// TestAShorterLimitIsWatchedAtOnce: a watchdog with a short limit, started
// while only long ones are watched, is told within its own limit's
// precision, not at the long ones' tick.
func TestAShorterLimitIsWatchedAtOnce(t *testing.T) {
	var long Watchdog
	long.Start(time.Hour, newExpiries())
	defer long.Stop()
	time.Sleep(5 * time.Millisecond) // the watch ticks at the hour's pace
	const limit = 40 * time.Millisecond
	e := newExpiries()
	var short Watchdog
	short.Start(limit, e)
	defer short.Stop()
	began := time.Now()
	short.Begin()
	waited := e.wait(t).Sub(began)
	if waited < limit {
		t.Fatalf("expired after %v, before the %v limit", waited, limit)
	}
	// A tick late, and a loaded machine's scheduling: far below the
	// hour's tick of 7.5 minutes.
	if waited > 10*time.Second {
		t.Fatalf("expired after %v: the short limit waited for the long one's tick", waited)
	}
}

// TestTheWatchStopsWhenIdle: with nothing started, the watch's goroutine
// ends, and a watchdog started afterwards is watched again.
func TestTheWatchStopsWhenIdle(t *testing.T) {
	var w Watchdog
	w.Start(8*time.Millisecond, newExpiries())
	w.Stop()
	for i := 0; ; i++ {
		watch.mu.Lock()
		running := watch.running
		watch.mu.Unlock()
		if !running {
			break
		}
		if i == 3000 { // failure guard: 30 s
			t.Fatal("the watch still runs with nothing started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e := newExpiries()
	w.Start(8*time.Millisecond, e)
	defer w.Stop()
	w.Begin()
	e.wait(t)
}

// TestManyWatchdogsAtOnce: watchdogs started, marked and stopped from many
// goroutines (under -race) are each told only of their own stall. The
// ones that never stall have a long limit, so no pause of a loaded
// machine between Begin and End passes for one.
func TestManyWatchdogsAtOnce(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			e := newExpiries()
			var w Watchdog
			for range 50 {
				w.Start(10*time.Second, e)
				w.Begin()
				w.End()
				if w.Stop() {
					t.Error("a watchdog with no stalled operation expired")
				}
			}
			if i%4 != 0 {
				return
			}
			w.Start(30*time.Millisecond, e)
			w.Begin()
			e.wait(t)
			if !w.Stop() {
				t.Error("Stop did not report the expiry")
			}
		})
	}
	wg.Wait()
}

// blockingExpiry blocks in Expire until released.
type blockingExpiry struct {
	entered, release chan struct{}
}

func (b *blockingExpiry) Expire() {
	close(b.entered)
	<-b.release
}

// TestABlockedExpiryHoldsUpOnlyItsOwnStop: while one Expirer blocks, other
// watchdogs start and stop; its own Stop waits until it returns.
func TestABlockedExpiryHoldsUpOnlyItsOwnStop(t *testing.T) {
	b := &blockingExpiry{entered: make(chan struct{}), release: make(chan struct{})}
	var stuck Watchdog
	stuck.Start(5*time.Millisecond, b)
	stuck.Begin()
	select {
	case <-b.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled operation never expired")
	}
	var other Watchdog
	other.Start(time.Hour, newExpiries())
	other.Stop()

	stopped := make(chan bool)
	go func() { stopped <- stuck.Stop() }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while its Expirer still ran")
	case <-time.After(20 * time.Millisecond):
	}
	close(b.release)
	if !<-stopped {
		t.Fatal("Stop did not report the expiry")
	}
}
