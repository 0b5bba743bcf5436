package circuit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

func graph(circuits ...*plan.Circuit) *plan.Graph {
	g := &plan.Graph{}
	for i, c := range circuits {
		g.Providers = append(g.Providers, plan.Provider{Name: string(rune('a' + i)), Circuit: c})
	}
	return g
}

// loadFor loads g into set and returns the breakers its requests find,
// indexed like its providers.
func loadFor(set *Set, g *plan.Graph) []*Breaker {
	set.Load(g)
	out := make([]*Breaker, len(g.Providers))
	for i := range out {
		out[i] = set.Breaker(g, i)
	}
	return out
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestOpensAfterConsecutiveFailures(t *testing.T) {
	var changes []string
	set := NewSet(func(p string, from, to State, _ int64) {
		changes = append(changes, p+":"+from.String()+">"+to.String())
	})
	b := loadFor(set, graph(&plan.Circuit{Failures: 3, CoolDownMS: 10_000, HalfOpenProbes: 1}))[0]
	b.Failure(t0)
	b.Failure(t0)
	b.Success(t0) // the run ends: two more do not open it
	b.Failure(t0)
	b.Failure(t0)
	if _, ok, _ := b.Allow(t0); !ok {
		t.Fatal("opened after 2 consecutive failures, want 3")
	}
	b.Failure(t0.Add(time.Second))
	_, ok, wait := b.Allow(t0.Add(3 * time.Second))
	if ok || wait != 8*time.Second {
		t.Fatalf("after 3 failures: allow=%v wait=%v, want refused with 8s left", ok, wait)
	}
	st := b.Status(t0.Add(3 * time.Second))
	if st.State != Open || st.Failures != 3 || !st.Since.Equal(t0.Add(time.Second)) || !st.RetryAt.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("status %+v", st)
	}
	if len(changes) != 1 || changes[0] != "a:closed>open" {
		t.Fatalf("changes %v", changes)
	}
}

func TestHalfOpenProbesThenCloseOrReopen(t *testing.T) {
	b := loadFor(NewSet(nil), graph(&plan.Circuit{Failures: 1, CoolDownMS: 1000, HalfOpenProbes: 2}))[0]
	b.Failure(t0)
	at := t0.Add(time.Second)
	if ok, _ := b.Peek(at); !ok {
		t.Fatal("peek after the cool-down: refused")
	}
	if b.Status(at).State != Open {
		t.Fatal("peek changed the state")
	}
	for i := range 2 {
		if _, ok, _ := b.Allow(at); !ok {
			t.Fatalf("probe %d refused", i)
		}
	}
	if _, ok, wait := b.Allow(at.Add(100 * time.Millisecond)); ok || wait != 900*time.Millisecond {
		t.Fatalf("third request in the window: allow=%v wait=%v, want refused, 900ms", ok, wait)
	}
	if ok, _ := b.Peek(at); ok {
		t.Fatal("peek allows past the probes")
	}
	b.Failure(at.Add(200 * time.Millisecond)) // a probe failed: open again, for a whole cool-down
	if _, ok, wait := b.Allow(at.Add(300 * time.Millisecond)); ok || wait != 900*time.Millisecond {
		t.Fatalf("after a failed probe: allow=%v wait=%v", ok, wait)
	}
	at = at.Add(1200 * time.Millisecond)
	if _, ok, _ := b.Allow(at); !ok {
		t.Fatal("probe after the second cool-down refused")
	}
	b.Success(at)
	if st := b.Status(at); st.State != Closed || st.Failures != 0 || st.RetryAt != nil {
		t.Fatalf("after a good probe: %+v", st)
	}
	if _, ok, _ := b.Allow(at); !ok {
		t.Fatal("closed breaker refuses")
	}
}

// A half-open window whose probes never report (cancelled, or refused by a
// later gate) lets new probes through after a cool-down instead of staying
// shut for ever.
func TestHalfOpenWindowRenews(t *testing.T) {
	b := loadFor(NewSet(nil), graph(&plan.Circuit{Failures: 1, CoolDownMS: 1000, HalfOpenProbes: 1}))[0]
	b.Failure(t0)
	if _, ok, _ := b.Allow(t0.Add(time.Second)); !ok {
		t.Fatal("first probe refused")
	}
	if _, ok, _ := b.Allow(t0.Add(1500 * time.Millisecond)); ok {
		t.Fatal("second probe in the same window allowed")
	}
	if _, ok, _ := b.Allow(t0.Add(2 * time.Second)); !ok {
		t.Fatal("a new window did not open after a cool-down without a verdict")
	}
}

// A probe given back without a verdict (its request never sent, or
// answered with neither success nor failure) lets the next request probe
// in the same window; one given back after its verdict, or after its
// window was renewed, changes nothing.
func TestProbeGivenBackWithoutAVerdict(t *testing.T) {
	b := loadFor(NewSet(nil), graph(&plan.Circuit{Failures: 1, CoolDownMS: 1000, HalfOpenProbes: 1}))[0]
	b.Failure(t0)
	at := t0.Add(time.Second)
	p, ok, _ := b.Allow(at)
	if !ok || !p.Taken() {
		t.Fatal("half-open: no probe")
	}
	if _, ok, _ := b.Allow(at); ok {
		t.Fatal("a second probe past the bound")
	}
	p.Return()
	p.Return() // twice: still one probe given back
	again, ok, _ := b.Allow(at)
	if !ok {
		t.Fatal("the probe given back was not let through again")
	}
	if _, ok, _ := b.Allow(at); ok {
		t.Fatal("returning twice gave back two probes")
	}

	b.Failure(at) // the probe's verdict: open again
	again.Return()
	if st := b.Status(at); st.State != Open {
		t.Fatalf("returned after its verdict: %s, want open", st.State)
	}

	renewed := at.Add(time.Second)
	old, _, _ := b.Allow(renewed) // half-open, window at renewed
	newWindow := renewed.Add(time.Second)
	if _, ok, _ := b.Allow(newWindow); !ok { // no verdict within a cool-down: a new window
		t.Fatal("no new window")
	}
	old.Return()
	if st := b.Status(newWindow); st.Probes != 1 {
		t.Fatalf("a probe of an old window given back to the new one: %d probes taken, want 1", st.Probes)
	}

	closed := loadFor(NewSet(nil), graph(&plan.Circuit{Failures: 5, CoolDownMS: 1000, HalfOpenProbes: 1}))[0]
	if p, _, _ := closed.Allow(at); p.Taken() {
		t.Fatal("a closed breaker took a probe")
	}
}

// Probes are bounded under concurrency: the count lives in the CAS'd word.
func TestProbesBoundedConcurrently(t *testing.T) {
	b := loadFor(NewSet(nil), graph(&plan.Circuit{Failures: 1, CoolDownMS: 1000, HalfOpenProbes: 3}))[0]
	b.Failure(t0)
	at := t0.Add(time.Second)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if _, ok, _ := b.Allow(at); ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 3 {
		t.Fatalf("%d probes let through, want 3", n)
	}
}

// A reload keeps the state of the providers it still declares with a
// circuit, under the new configuration, and drops the others.
func TestSetKeepsStateAcrossReloads(t *testing.T) {
	set := NewSet(nil)
	first := loadFor(set, graph(&plan.Circuit{Failures: 2, CoolDownMS: 1000, HalfOpenProbes: 1}, &plan.Circuit{Failures: 1, CoolDownMS: 1000, HalfOpenProbes: 1}))
	first[0].Failure(t0)
	first[1].Failure(t0)
	g := graph(&plan.Circuit{Failures: 1, CoolDownMS: 5000, HalfOpenProbes: 1}, nil)
	second := loadFor(set, g)
	if second[0] != first[0] || second[1] != nil {
		t.Fatalf("reload: %v", second)
	}
	if _, ok, _ := second[0].Allow(t0); !ok {
		t.Fatal("open before a further failure")
	}
	second[0].Failure(t0) // run of 2 against the new threshold of 1
	if _, ok, wait := second[0].Allow(t0.Add(time.Second)); ok || wait != 4*time.Second {
		t.Fatalf("new cool-down not applied: allow=%v wait=%v", ok, wait)
	}
	g.Providers[1].Circuit = &plan.Circuit{Failures: 1, CoolDownMS: 1000, HalfOpenProbes: 1}
	if third := loadFor(set, g); third[1] == first[1] {
		t.Fatal("a breaker dropped by a reload came back with its old state")
	}
}

func BenchmarkAllowClosed(b *testing.B) {
	br := loadFor(NewSet(nil), graph(&plan.Circuit{Failures: 5, CoolDownMS: 1000, HalfOpenProbes: 1}))[0]
	now := time.Now()
	for b.Loop() {
		br.Allow(now)
		br.Success(now)
	}
}
