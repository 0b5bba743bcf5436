package budget

import (
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// TestUsageRowsCountWhatWasMetered: every settled answer that reported
// usage, or was a 2xx, counts in its (day, provider, model, grouping keys)
// row, class by class; a 2xx without usage counts as a request settled at
// the estimate with no tokens; an error without usage and a release count
// nothing; a profile without budgets counts like any other.
func TestUsageRowsCountWhatWasMetered(t *testing.T) {
	s := testSnapshot(t, total(1_000_000, plan.WindowDay, plan.PerKey))
	s.Graph.Providers[1].UsageAPI = &plan.UsageAPI{KeyID: "key_dear", WorkspaceID: "wrk_1"}
	c := newClock(noon)
	led := NewMemory()
	g := New(led, nil, c.now)
	settle := func(key int, cand *plan.Candidate, o *admission.Outcome) {
		t.Helper()
		tk, no := g.Admit(request(s, key, 400, 50), cand)
		if no != nil {
			t.Fatal(no.Error)
		}
		if o == nil {
			tk.Release()
			return
		}
		tk.Settle(o)
	}
	u := meter.Usage{InputTokens: 100, CachedInputTokens: 40, CacheCreationInputTokens: 10, OutputTokens: 30, ReasoningTokens: 12, TotalTokens: 130, Reported: true}
	settle(0, cheap, &admission.Outcome{Status: 200, Usage: u})
	settle(2, cheap, &admission.Outcome{Status: 200, Usage: u})                                                          // no budgets
	settle(1, cheap, &admission.Outcome{Status: 200})                                                                    // at the estimate
	settle(1, cheap, &admission.Outcome{Status: 502})                                                                    // nothing served
	settle(1, cheap, nil)                                                                                                // released
	settle(0, dear, &admission.Outcome{Status: 400, Usage: meter.Usage{InputTokens: 7, TotalTokens: 7, Reported: true}}) // reported: counted
	c.set(noon.Add(12 * time.Hour))                                                                                      // the next UTC day
	settle(0, dear, &admission.Outcome{Status: 200, Usage: u})
	settle(0, dear, &admission.Outcome{Status: 200, Usage: u, Model: "big-2"}) // a pool's picker rewrote the model
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	day := noon.Truncate(24 * time.Hour).Unix()
	want := []UsageDelta{
		{UsageKey{day, "cheap", "small-1", "", ""}, UsageCounts{Requests: 3, Estimated: 1, Input: 200, CachedInput: 80, CacheCreation: 20, Output: 60, Reasoning: 24}},
		{UsageKey{day, "dear", "big-1", "key_dear", "wrk_1"}, UsageCounts{Requests: 1, Input: 7}},
	}
	assertRows(t, g, day, want)
	next := UsageCounts{Requests: 1, Input: 100, CachedInput: 40, CacheCreation: 10, Output: 30, Reasoning: 12}
	assertRows(t, g, day+secondsPerDay, []UsageDelta{
		{UsageKey{day + secondsPerDay, "dear", "big-1", "key_dear", "wrk_1"}, next},
		{UsageKey{day + secondsPerDay, "dear", "big-2", "key_dear", "wrk_1"}, next},
	})
	// A flush with nothing new settled adds nothing.
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	assertRows(t, g, day, want)
}

func assertRows(t *testing.T, g *Gate, day int64, want []UsageDelta) {
	t.Helper()
	got, err := g.Usage(day)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("day %d: rows %+v, want %+v", day, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("day %d row %d: %+v, want %+v", day, i, got[i], want[i])
		}
	}
}

// TestUsageKeptWhileTheLedgerIsDown: the usage of flushes that failed is
// written, once, by the first that succeeds, with what was settled since.
func TestUsageKeptWhileTheLedgerIsDown(t *testing.T) {
	s := testSnapshot(t, total(1_000_000, plan.WindowDay, plan.PerKey))
	led := &flaky{Memory: NewMemory()}
	g := New(led, nil, newClock(noon).now)
	o := &admission.Outcome{Status: 200, Usage: meter.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6, Reported: true}}
	led.down.Store(true)
	for range 3 {
		tk, _ := g.Admit(request(s, 2, 4, 1), cheap)
		tk.Settle(o)
		if err := g.Flush(); err == nil {
			t.Fatal("a flush succeeded with the ledger down")
		}
	}
	led.down.Store(false)
	tk, _ := g.Admit(request(s, 2, 4, 1), cheap)
	tk.Settle(o)
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	day := noon.Truncate(24 * time.Hour).Unix()
	assertRows(t, g, day, []UsageDelta{{UsageKey{day, "cheap", "small-1", "", ""}, UsageCounts{Requests: 4, Input: 20, Output: 4}}})
}

// TestReportListsTheLedgersBuckets: a node that never served a bucket (a
// sibling, or itself before a restart) reports the bucket the ledger
// holds for an open window, with the limit the policy declares; a bucket
// whose window is over is not listed.
func TestReportListsTheLedgersBuckets(t *testing.T) {
	s := testSnapshot(t, total(1000, plan.WindowMinute, plan.PerKey))
	c := newClock(noon)
	led := NewMemory()
	served := New(led, nil, c.now)
	tk, _ := served.Admit(request(s, 0, 400, 50), cheap)
	tk.Settle(&admission.Outcome{Status: 200, Usage: meter.Usage{TotalTokens: 120, Reported: true}})
	if err := served.Flush(); err != nil {
		t.Fatal(err)
	}
	fresh := New(led, nil, c.now)
	rep, err := fresh.Report(s.Graph)
	if err != nil {
		t.Fatal(err)
	}
	start := noon.Truncate(time.Minute)
	want := BucketReport{Budget: "b", Bucket: "k0", WindowStart: start, Reset: start.Add(time.Minute), Limit: 1000, Spent: 120, Cluster: 120}
	if len(rep) != 1 || rep[0] != want {
		t.Fatalf("report %+v, want [%+v]", rep, want)
	}
	// Here too: the node that served it reports its own figures once.
	tk, _ = served.Admit(request(s, 0, 40, 10), cheap)
	rep, err = served.Report(s.Graph)
	if err != nil || len(rep) != 1 || rep[0].Spent != 120 || rep[0].Held != 20 {
		t.Fatalf("the serving node's report %+v %v, want one bucket spent 120 held 20", rep, err)
	}
	tk.Release()
	c.set(noon.Add(time.Minute))
	if rep, err := fresh.Report(s.Graph); err != nil || len(rep) != 0 {
		t.Errorf("after the window: %+v %v, want none", rep, err)
	}
}
