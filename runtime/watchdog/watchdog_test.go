package watchdog

import (
	"testing"
	"time"
)

// TestExpiresOnlyOnAStalledOperation: pauses between operations do not
// count; an operation that stays in progress for the limit expires once.
// Sleeps only create the situations; the assertions are on what happened.
func TestExpiresOnlyOnAStalledOperation(t *testing.T) {
	const limit = 20 * time.Millisecond
	expired := make(chan struct{}, 4)
	w := New(limit, func() { expired <- struct{}{} })
	defer w.Stop()
	for i := 0; i < 3; i++ {
		time.Sleep(3 * limit) // idle between operations
		w.Begin()
		w.End()
	}
	select {
	case <-expired:
		t.Fatal("expired while no operation was in progress")
	default:
	}
	w.Begin()
	select {
	case <-expired:
	case <-time.After(30 * time.Second): // failure guard only
		t.Fatal("a stalled operation never expired")
	}
	time.Sleep(3 * limit)
	if len(expired) != 0 {
		t.Errorf("expired %d more times", len(expired))
	}
}

// TestStopPreventsExpiry: after Stop, a stalled operation is not reported.
func TestStopPreventsExpiry(t *testing.T) {
	const limit = 10 * time.Millisecond
	expired := make(chan struct{}, 1)
	w := New(limit, func() { expired <- struct{}{} })
	w.Begin()
	w.Stop()
	time.Sleep(5 * limit)
	if len(expired) != 0 {
		t.Fatal("expired after Stop")
	}
}
