package extproc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit/fakepicker"
	"github.com/pistra/pistra/runtime/pool/extproc"
)

// TestServedReported: Served opens the response phase with the status
// and the endpoint that served in the metadata; Done ends the response
// body and closes the stream, which the picker has seen end by the time
// Done returns.
func TestServedReported(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000", "127.0.0.3:8000")})
	a := pick(t, c, query(1000))
	a.Served("127.0.0.3:8000", 200)
	a.Served("127.0.0.2:8000", 500) // only the first counts
	a.Done()
	got := p.Requests()[0]
	equal(t, "served", got.Served, "127.0.0.3:8000")
	equal(t, "status", got.Status, "200")
	equal(t, "response end", got.ResponseEnd, true)
	equal(t, "ended", got.Ended, true)
	equal(t, "closed by the client", got.Closed, true)
}

// TestDoneWithoutServed: a request that no member answered ends its
// stream without a response phase.
func TestDoneWithoutServed(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000")})
	a := pick(t, c, query(0))
	a.Done()
	a.Done()
	a.Served("127.0.0.2:8000", 200) // after Done: nothing sent
	got := p.Requests()[0]
	equal(t, "ended", got.Ended, true)
	equal(t, "closed by the client", got.Closed, true)
	equal(t, "served", got.Served, "")
	equal(t, "response end", got.ResponseEnd, false)

	var none *extproc.Answer // a request without a picker
	none.Served("127.0.0.2:8000", 200)
	none.Done()
	equal(t, "no model", none.Model(), "")
}

// TestEvictionAfterServed: a picker evicting the request once its
// response has started is drained and ignored: the answer is committed.
func TestEvictionAfterServed(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
		r := fakepicker.Pick("127.0.0.2:8000")
		r.Evict = true
		return r
	}})
	a := pick(t, c, query(0))
	a.Served("127.0.0.2:8000", 200)
	within(t, time.Second, a.Done)
	got := p.WaitEnded(t, 1)[0]
	equal(t, "served", got.Served, "127.0.0.2:8000")
}

// TestDoneBounded: a picker that keeps the stream open after the client
// closed its side does not hold Done past the pick's bound.
func TestDoneBounded(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
		r := fakepicker.Pick("127.0.0.2:8000")
		r.Linger = true
		return r
	}})
	q := query(0)
	q.Timeout = 200 * time.Millisecond
	a := pick(t, c, q)
	a.Served("127.0.0.2:8000", 200)
	took := within(t, 2*time.Second, a.Done)
	if took < q.Timeout/2 {
		t.Errorf("Done took %s: the lingering picker was not waited for", took)
	}
	got := p.WaitEnded(t, 1)[0]
	equal(t, "served", got.Served, "127.0.0.2:8000")
	equal(t, "response end", got.ResponseEnd, true)
}

// TestContextEndsStream: the request's context ending cuts a stream
// whose answer is not done yet; Done after it returns at once.
func TestContextEndsStream(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000")})
	pick(t, c, query(0)).Done() // the connection is up before counting
	check := goroutines(t)
	ctx, cancel := context.WithCancel(t.Context())
	a, err := c.Pick(ctx, query(0))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	got := p.WaitEnded(t, 2)[1]
	equal(t, "closed by the client", got.Closed, false)
	check()
	within(t, time.Second, a.Done)
}

// TestNoGoroutineOutlivesPick: whatever became of a pick (served and
// done, refused, timed out, failed, the picker gone mid-stream), no
// goroutine of it is left once it failed or its Done returned.
func TestNoGoroutineOutlivesPick(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000")})
	pick(t, c, query(0)).Done()
	check := goroutines(t)
	for i, tc := range []struct {
		name    string
		reply   fakepicker.Reply
		timeout time.Duration // the hang's and Done's bound
		picked  bool
	}{
		{"served", fakepicker.Pick("127.0.0.2:8000"), 5 * time.Second, true},
		{"shed", fakepicker.Immediate(429, "shed"), 5 * time.Second, false},
		{"hang", fakepicker.Reply{Hang: true}, 100 * time.Millisecond, false},
		{"gRPC error", fakepicker.Reply{Err: errors.New("boom")}, 5 * time.Second, false},
		{"lingering", fakepicker.Reply{Header: "127.0.0.2:8000", Linger: true}, 300 * time.Millisecond, true},
		{"protocol", fakepicker.Reply{}, 5 * time.Second, false},
	} {
		p.SetScript(func(fakepicker.Request) fakepicker.Reply { return tc.reply })
		q := query(100 << 10)
		q.Timeout = tc.timeout
		a, err := c.Pick(t.Context(), q)
		if (err == nil) != tc.picked {
			t.Fatalf("%s: err = %v, want a pick %v", tc.name, err, tc.picked)
		}
		if err == nil {
			a.Served("127.0.0.2:8000", 200)
			a.Done()
		}
		p.WaitEnded(t, i+2)
	}
	check()
}

// TestPickerGoneMidStream: a picker that goes away between the pick and
// Done leaves Served and Done to return at once.
func TestPickerGoneMidStream(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000")})
	a := pick(t, c, query(0))
	p.Stop()
	within(t, time.Second, func() { a.Served("127.0.0.2:8000", 200); a.Done() })
	_, err := c.Pick(t.Context(), query(0))
	if err == nil || errors.Is(err, extproc.ErrTimeout) {
		t.Errorf("err = %v with the picker gone", err)
	}
}

// TestConcurrentPicks: the requests of a pool share one connection, each
// on its own stream, each answered and reported on its own.
func TestConcurrentPicks(t *testing.T) {
	members := []string{"127.0.0.2:8000", "127.0.0.3:8000", "127.0.0.4:8000"}
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin(members...)})
	const n = 24
	errs := make(chan error, n)
	for range n {
		go func() {
			a, err := c.Pick(t.Context(), query(10<<10))
			if err == nil {
				a.Served(a.Endpoints[0], 200)
				a.Done()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	served := map[string]int{}
	for _, r := range p.WaitEnded(t, n) {
		served[r.Served]++
	}
	for _, m := range members {
		equal(t, "picks of "+m, served[m], n/len(members))
	}
}

// BenchmarkPick is one pick and its response phase against the fake
// picker on loopback: what a request through a pool with a picker adds.
func BenchmarkPick(b *testing.B) {
	p := fakepicker.Start(b, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000")})
	c, err := extproc.Dial(p.Addr(), extproc.Options{Plaintext: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q := query(2 << 10)
	b.ReportAllocs()
	for b.Loop() {
		a, err := c.Pick(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		a.Served(a.Endpoints[0], 200)
		a.Done()
	}
}
