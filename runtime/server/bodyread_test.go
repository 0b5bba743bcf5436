package server

import (
	"sync"
	"testing"
	"time"
)

// deadlines records the read deadlines set on a connection.
type deadlines struct {
	mu  sync.Mutex
	set []time.Time
}

func (d *deadlines) SetReadDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.set = append(d.set, t)
	return nil
}

func (d *deadlines) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.set)
}

// TestBodyReadCutsOnlyLateReads: a read still going after the limit has
// its deadline set in the past and is reported cut; one that ends in time
// is never touched, nor is either once it ended.
func TestBodyReadCutsOnlyLateReads(t *testing.T) {
	const limit = 100 * time.Millisecond

	var quick bodyRead
	var qd deadlines
	quick.begin(limit, &qd)
	if quick.end() {
		t.Fatal("a read ended at once was cut")
	}

	var slow bodyRead
	var sd deadlines
	start := time.Now()
	slow.begin(limit, &sd)
	for i := 0; sd.count() == 0; i++ {
		if i == 3000 { // a failure guard: 30 s
			t.Fatal("a stalled read was never cut")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if waited := time.Since(start); waited < limit {
		t.Fatalf("cut after %v, before the %v limit", waited, limit)
	}
	if !slow.end() {
		t.Fatal("the cut read was not reported cut")
	}
	if got := sd.set[0]; !got.Before(start) {
		t.Fatalf("the cut set the deadline %v, not one in the past", got)
	}
	time.Sleep(3 * limit)
	if qd.count() != 0 || sd.count() != 1 {
		t.Fatalf("deadlines set after the reads ended: quick %d, slow %d", qd.count(), sd.count())
	}
}
