package budget

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/snapshot"
)

// clock is a settable test clock.
type clock struct{ t atomic.Pointer[time.Time] }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) set(t time.Time)  { c.t.Store(&t) }
func (c *clock) now() time.Time   { return *c.t.Load() }

func hashOf(k string) string {
	d := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(d[:])
}

// testSnapshot has two providers (cheap, dear), a profile "metered" drawing
// on the budgets given, and a profile "free" on none; keys k0 and k1 are
// metered, k2 free.
func testSnapshot(t testing.TB, budgets ...plan.Budget) *snapshot.Snapshot {
	t.Helper()
	g := &plan.Graph{OnFidelityLoss: plan.LossReject}
	for _, name := range []string{"cheap", "dear"} {
		g.Providers = append(g.Providers, plan.Provider{Name: name, Pool: -1, Channels: []plan.Channel{{Name: "native"}}})
	}
	var idx []int
	for i := range budgets {
		if budgets[i].CostType == plan.CostCEL {
			e, err := expr.CompileCost(`model.startsWith("big") ? input_tokens + output_tokens * 4u : input_tokens + output_tokens`)
			if err != nil {
				t.Fatal(err)
			}
			budgets[i].CostExpr = len(g.CEL)
			g.CEL = append(g.CEL, e)
		}
		idx = append(idx, i)
	}
	g.Budgets = budgets
	g.Tables = []plan.Table{{}}
	g.Profiles = []plan.Profile{{Name: "metered", Budgets: idx}, {Name: "free"}}
	g.Keys = []plan.Key{{Name: "k0", Hash: hashOf("k0")}, {Name: "k1", Hash: hashOf("k1")}, {Name: "k2", Hash: hashOf("k2"), Profile: 1}}
	s, err := snapshot.New(g, "test", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func request(s *snapshot.Snapshot, key int, bodyBytes int, maxOutput uint64) *admission.Request {
	return &admission.Request{Graph: s.Graph, Programs: s.Programs, Profile: s.Graph.Keys[key].Profile, Key: key, Route: plan.RouteChatCompletions,
		Body: make([]byte, bodyBytes), MaxOutput: maxOutput}
}

var (
	cheap = &plan.Candidate{Provider: 0, Model: "small-1"}
	dear  = &plan.Candidate{Provider: 1, Model: "big-1"}
)

var noon = time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)

func total(limit uint64, w plan.Window, per plan.BucketScope) plan.Budget {
	return plan.Budget{Name: "b", Limit: limit, Window: w, Per: per, CostType: plan.CostTotalToken, CostExpr: -1}
}

// report is g's report against no graph.
func report(t *testing.T, g *Gate) []BucketReport {
	t.Helper()
	rep, err := g.Report(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func held(t *testing.T, g *Gate, bucket string) (spent, held uint64) {
	t.Helper()
	for _, r := range report(t, g) {
		if r.Bucket == bucket {
			spent, held = spent+r.Spent, held+r.Held
		}
	}
	return spent, held
}

// TestHoldIsTheEstimate: body bytes / 4 in, the stated output limit (or
// 1024) out; a profile without budgets holds nothing (its ticket only
// counts usage).
func TestHoldIsTheEstimate(t *testing.T) {
	s := testSnapshot(t, total(1_000_000, plan.WindowDay, plan.PerKey))
	g := New(NewMemory(), nil, newClock(noon).now)
	if _, no := g.Admit(request(s, 0, 400, 50), cheap); no != nil {
		t.Fatal(no.Error)
	}
	if _, h := held(t, g, "k0"); h != 100+50 {
		t.Errorf("held %d, want 150", h)
	}
	if _, no := g.Admit(request(s, 1, 40, 0), cheap); no != nil {
		t.Fatal(no.Error)
	}
	if _, h := held(t, g, "k1"); h != 10+1024 {
		t.Errorf("held %d, want 1034", h)
	}
	tk, no := g.Admit(request(s, 2, 4000, 0), cheap)
	if no != nil || tk == nil || len(report(t, g)) != 2 {
		t.Fatalf("a profile without budgets: %v %v, %d buckets", tk, no, len(report(t, g)))
	}
	if _, h := held(t, g, "k0"); h != 150 {
		t.Errorf("a profile without budgets held: k0 holds %d, want 150", h)
	}
	if _, h := held(t, g, "k1"); h != 1034 {
		t.Errorf("a profile without budgets held: k1 holds %d, want 1034", h)
	}
	tk.Release()
}

// TestSettlementOutcomes: usage reported replaces the hold; a 2xx with none
// settles at the hold; no answer releases it.
func TestSettlementOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		o     *admission.Outcome
		spent uint64
	}{
		{"usage reported", &admission.Outcome{Status: 200, Usage: meter.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10, Reported: true}}, 10},
		{"2xx without usage: the estimate", &admission.Outcome{Status: 200}, 150},
		{"stream cut, usage seen so far", &admission.Outcome{Status: 200, Usage: meter.Usage{InputTokens: 90, Reported: true}}, 90},
		{"upstream error answer: released", &admission.Outcome{Status: 503}, 0},
		{"never answered: released", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSnapshot(t, total(1000, plan.WindowDay, plan.PerKey))
			g := New(NewMemory(), nil, newClock(noon).now)
			tk, no := g.Admit(request(s, 0, 400, 50), cheap)
			if no != nil {
				t.Fatal(no.Error)
			}
			if tt.o == nil {
				tk.Release()
			} else {
				tk.Settle(tt.o)
			}
			tk.Release() // a second close must change nothing
			if spent, h := held(t, g, "k0"); spent != tt.spent || h != 0 {
				t.Errorf("spent %d held %d, want %d and 0", spent, h, tt.spent)
			}
		})
	}
}

// TestHoldIsAtomic: concurrent requests on one bucket never take more than
// its limit: exactly as many are admitted as fit, never one more.
func TestHoldIsAtomic(t *testing.T) {
	s := testSnapshot(t, total(10*150+100, plan.WindowDay, plan.PerProfile))
	g := New(NewMemory(), nil, newClock(noon).now)
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			if _, no := g.Admit(request(s, i%2, 400, 50), cheap); no == nil {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 10 {
		t.Fatalf("admitted %d of 64, want exactly 10", n)
	}
	if _, h := held(t, g, "metered"); h != 1500 {
		t.Errorf("held %d", h)
	}
}

// TestRefusalNamesTheBudgetAndItsReset: several budgets must all have room;
// the refusal names the one without, as a 429 with retry-after at its
// window's reset, and what the others took is given back.
func TestRefusalNamesTheBudgetAndItsReset(t *testing.T) {
	roomy := total(1_000_000, plan.WindowDay, plan.PerKey)
	roomy.Name = "roomy"
	tight := total(100, plan.WindowHour, plan.PerProfile)
	tight.Name = "tight"
	s := testSnapshot(t, roomy, tight)
	g := New(NewMemory(), nil, newClock(noon).now)
	_, no := g.Admit(request(s, 0, 400, 50), cheap)
	if no == nil {
		t.Fatal("admitted over a tight budget")
	}
	e := no.Error
	if no.Reason != ReasonExceeded || e.Status != http.StatusTooManyRequests || e.Code != dialect.CodeBudgetExceeded {
		t.Fatalf("refusal %+v", e)
	}
	if want := 59*time.Minute + 30*time.Second; e.RetryAfter != want {
		t.Errorf("retry after %v, want %v", e.RetryAfter, want)
	}
	h := http.Header{}
	e.SetRetryHeaders(h)
	if h.Get("Retry-After") != "3570" || h.Get("X-Should-Retry") != "false" {
		t.Errorf("headers %v", h)
	}
	for _, r := range report(t, g) {
		if r.Held != 0 {
			t.Errorf("bucket %s/%s still holds %d after the refusal", r.Budget, r.Bucket, r.Held)
		}
	}
	if !contains(e.Message, `"tight"`) || !contains(e.Message, "2026-12-01T13:00:00Z") {
		t.Errorf("message %q", e.Message)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestWindowRollsWithHoldsInFlight: a hold taken in one window settles into
// that window's bucket, while new requests draw on the next window's; the
// old bucket is dropped once it holds nothing and is flushed.
func TestWindowRollsWithHoldsInFlight(t *testing.T) {
	s := testSnapshot(t, total(200, plan.WindowMinute, plan.PerKey))
	c := newClock(noon)
	led := NewMemory()
	g := New(led, nil, c.now)
	tk, no := g.Admit(request(s, 0, 400, 50), cheap) // holds 150 of 200 at 12:00
	if no != nil {
		t.Fatal(no.Error)
	}
	if _, no := g.Admit(request(s, 0, 400, 50), cheap); no == nil {
		t.Fatal("a second hold fit in the same window")
	}
	c.set(noon.Add(time.Minute)) // 12:01: a fresh window
	tk2, no := g.Admit(request(s, 0, 400, 50), cheap)
	if no != nil {
		t.Fatalf("the new window has no room: %v", no.Error)
	}
	tk.Settle(&admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 120, Reported: true}})
	tk2.Release()
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	var totals [2]uint64
	keys := []Key{{Budget: "b", Bucket: "k0", Period: plan.WindowMinute, Window: noon.Truncate(time.Minute).Unix()},
		{Budget: "b", Bucket: "k0", Period: plan.WindowMinute, Window: noon.Add(time.Minute).Truncate(time.Minute).Unix()}}
	if err := led.Read(keys, totals[:]); err != nil || totals != [2]uint64{120, 0} {
		t.Fatalf("ledger %v %v, want the spend in the window it was held in", totals, err)
	}
	rep := report(t, g)
	if len(rep) != 1 || !rep[0].WindowStart.Equal(noon.Add(time.Minute).Truncate(time.Minute)) {
		t.Errorf("open buckets %+v, want only the current window's", rep)
	}
}

// TestFlushSharesSpendThroughTheLedger: two gates on one ledger (two
// nodes) learn each other's spend at the next flush.
func TestFlushSharesSpendThroughTheLedger(t *testing.T) {
	s := testSnapshot(t, total(400, plan.WindowDay, plan.PerProfile))
	led := NewMemory()
	m := metrics.New()
	a, b := New(led, m, newClock(noon).now), New(led, nil, newClock(noon).now)
	tk, _ := a.Admit(request(s, 0, 400, 50), cheap)
	tk.Settle(&admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 300, Reported: true}})
	if _, no := b.Admit(request(s, 1, 4, 50), cheap); no != nil {
		t.Fatal("b refused before any flush")
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, no := b.Admit(request(s, 1, 400, 50), cheap); no == nil {
		t.Fatal("b admitted 150 more after learning of a's 300 (and its own 51 held)")
	}
	ratio := testkit.Gauge(t, m.Registry(), "pistra_budget_used_ratio", map[string]string{"budget": "b"})
	if ratio != 0.75 {
		t.Errorf("a's used ratio %v, want 0.75", ratio)
	}
}

// failing is a ledger that cannot answer.
type failing struct{}

func (failing) Read([]Key, []uint64) error             { return errors.New("no quorum") }
func (failing) Add([]Delta, []UsageDelta) error        { return errors.New("no quorum") }
func (failing) Totals(func(Key) bool) ([]Delta, error) { return nil, errors.New("no quorum") }
func (failing) Usage(int64) ([]UsageDelta, error)      { return nil, errors.New("no quorum") }

func TestLedgerDownIsABudgetError(t *testing.T) {
	s := testSnapshot(t, total(400, plan.WindowDay, plan.PerProfile))
	g := New(failing{}, nil, newClock(noon).now)
	_, no := g.Admit(request(s, 0, 400, 50), cheap)
	if no == nil || no.Reason != ReasonError || no.Error.Code != dialect.CodeBudgetError || no.Error.Status != 503 {
		t.Fatalf("refusal %+v", no)
	}
	h := http.Header{}
	no.Error.SetRetryHeaders(h)
	if h.Get("X-Should-Retry") != "true" {
		t.Errorf("a ledger that does not answer: x-should-retry %q, want true (it may answer the retry)", h.Get("X-Should-Retry"))
	}
}

// TestCELPricesTheCandidate: an expression weighting one model above
// another holds and charges at that weight, with the candidate's own model
// and provider.
func TestCELPricesTheCandidate(t *testing.T) {
	b := plan.Budget{Name: "weighted", Limit: 1_000_000, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostCEL}
	s := testSnapshot(t, b)
	g := New(NewMemory(), nil, newClock(noon).now)
	tk, _ := g.Admit(request(s, 0, 400, 50), dear)
	if _, h := held(t, g, "k0"); h != 100+50*4 {
		t.Errorf("held %d for the dear model, want 300", h)
	}
	tk.Settle(&admission.Outcome{Status: 200, Usage: meter.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Reported: true}})
	if spent, _ := held(t, g, "k0"); spent != 10+20 {
		t.Errorf("charged %d, want 30", spent)
	}
	tk, _ = g.Admit(request(s, 1, 400, 50), cheap)
	if _, h := held(t, g, "k1"); h != 150 {
		t.Errorf("held %d for the cheap model, want 150", h)
	}
	tk.Release()
}

// TestHoldAndSettleAllocateNothing: the steady state of a budgeted request
// (a hold, then its settlement) allocates nothing.
func TestHoldAndSettleAllocateNothing(t *testing.T) {
	s := testSnapshot(t, total(1<<60, plan.WindowDay, plan.PerKey))
	g := New(NewMemory(), nil, newClock(noon).now)
	r := request(s, 0, 400, 50)
	o := &admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 10, Reported: true}}
	if n := testing.AllocsPerRun(100, func() {
		tk, _ := g.Admit(r, cheap)
		tk.Settle(o)
	}); n != 0 {
		t.Errorf("%v allocations per hold and settle", n)
	}
}

func BenchmarkHoldAndSettle(b *testing.B) {
	s := testSnapshot(b, total(1<<60, plan.WindowDay, plan.PerKey))
	g := New(NewMemory(), nil, time.Now)
	r := request(s, 0, 1000, 256)
	o := &admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 10, Reported: true}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk, no := g.Admit(r, cheap)
			if no != nil {
				b.Fatal(no.Error)
			}
			tk.Settle(o)
		}
	})
}

// flaky is a ledger whose writes fail while down is set: a cluster without
// quorum.
type flaky struct {
	*Memory
	down atomic.Bool
}

func (f *flaky) Add(d []Delta, u []UsageDelta) error {
	if f.down.Load() {
		return errors.New("no leader")
	}
	return f.Memory.Add(d, u)
}

// TestNoQuorum: while flushes fail, a node serves on its last totals plus
// its own spend up to a share of the limit, then refuses budget_error; the
// spend it kept is written once the ledger answers again.
func TestNoQuorum(t *testing.T) {
	s := testSnapshot(t, total(10_000, plan.WindowDay, plan.PerProfile))
	led := &flaky{Memory: NewMemory()}
	g := New(led, nil, newClock(noon).now)
	g.SetDegradedShare(0.1) // 1000 of 10000
	spend := func() *admission.Refusal {
		tk, no := g.Admit(request(s, 0, 400, 50), cheap) // held at 150
		if no == nil {
			tk.Settle(&admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 150, Reported: true}})
		}
		return no
	}
	if spend() != nil || g.Flush() != nil { // 150 in the ledger
		t.Fatal("the first request")
	}
	led.down.Store(true)
	if spend() != nil { // 150 more, settled before any flush says the ledger is down
		t.Fatal("refused before the ledger was known to be down")
	}
	if err := g.Flush(); err == nil {
		t.Fatal("a flush without quorum succeeded")
	}
	served := 0
	for range 20 {
		if no := spend(); no != nil {
			if no.Reason != ReasonError || no.Error.Code != dialect.CodeBudgetError {
				t.Fatalf("refusal %+v", no.Error)
			}
			break
		}
		served++
	}
	if served != 5 { // 150 kept + 5 x 150 = 900 fits this node's 1000; a 6th would make 1050
		t.Errorf("served %d requests without quorum, want 5", served)
	}
	led.down.Store(false)
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	var tot [1]uint64
	_ = led.Read([]Key{{Budget: "b", Bucket: "metered", Period: plan.WindowDay, Window: noon.Truncate(24 * time.Hour).Unix()}}, tot[:])
	if tot[0] != 150+900 {
		t.Errorf("the ledger has %d after quorum returned, want 1050: nothing kept was lost", tot[0])
	}
	if no := spend(); no != nil {
		t.Errorf("refused once the ledger answers: %v", no.Error)
	}
}

// TestCELHoldsTheSubsetsAtTheirMost: an expression that charges a token
// subset above the whole holds as if the whole were that subset, so the
// hold stays an upper bound of what settlement can charge.
func TestCELHoldsTheSubsetsAtTheirMost(t *testing.T) {
	b := plan.Budget{Name: "reasoning-heavy", Limit: 1_000_000, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostCEL}
	s := testSnapshot(t, b)
	e, cerr := expr.CompileCost(`output_tokens + reasoning_tokens * 10u`)
	if cerr != nil {
		t.Fatal(cerr)
	}
	s.Graph.CEL[0] = e
	progs, err := expr.Load(s.Graph.CEL)
	if err != nil {
		t.Fatal(err)
	}
	s.Programs = progs
	g := New(NewMemory(), nil, newClock(noon).now)
	tk, no := g.Admit(request(s, 0, 0, 1000), cheap)
	if no != nil {
		t.Fatal(no.Error)
	}
	if _, h := held(t, g, "k0"); h != 1000+1000*10 {
		t.Errorf("held %d, want 11000: every output token could be reasoning", h)
	}
	tk.Release()
}

// TestAReloadedWindowIsANewBucket: a budget whose window a reload changes
// counts in a bucket of its own, not in the old window's.
func TestAReloadedWindowIsANewBucket(t *testing.T) {
	day := total(1000, plan.WindowDay, plan.PerKey)
	s := testSnapshot(t, day)
	g := New(NewMemory(), nil, newClock(noon).now)
	tk, _ := g.Admit(request(s, 0, 0, 900), cheap)
	tk.Settle(&admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 900, Reported: true}})
	hour := total(1000, plan.WindowHour, plan.PerKey)
	s2 := testSnapshot(t, hour)
	if _, no := g.Admit(request(s2, 0, 0, 500), cheap); no != nil {
		t.Fatalf("the hour window inherited the day's spend: %v", no.Error)
	}
}

// TestRefreshLearnsASiblingsFlush: between its own flushes a node re-reads
// the totals, so what a sibling flushed counts here before this node's next
// flush.
func TestRefreshLearnsASiblingsFlush(t *testing.T) {
	s := testSnapshot(t, total(400, plan.WindowDay, plan.PerProfile))
	led := NewMemory()
	a, b := New(led, nil, newClock(noon).now), New(led, nil, newClock(noon).now)
	if _, no := b.Admit(request(s, 1, 4, 10), cheap); no != nil { // b opens the bucket
		t.Fatal(no.Error)
	}
	tk, _ := a.Admit(request(s, 0, 400, 50), cheap)
	tk.Settle(&admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 300, Reported: true}})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(); err != nil {
		t.Fatal(err)
	}
	if spent, _ := held(t, b, "metered"); spent != 300 {
		t.Errorf("b counts %d after a refresh, want the 300 a flushed", spent)
	}
}
