package ledger

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/budget"
)

const usageDay = 1_764_547_200 // 2025-12-01T00:00:00Z

func usageFlush(session string, seq, base uint64, requests ...uint64) command {
	c := flushOf(session, seq, base)
	for i, n := range requests {
		c.Batch.Usage = append(c.Batch.Usage, wireUsage{Day: usageDay, Provider: "openai", Model: string(rune('a' + i)), KeyID: "key_1",
			Requests: n, Estimated: n / 2, Input: 10 * n, CachedInput: 4 * n, CacheCreation: 2 * n, Output: 3 * n, Reasoning: n})
	}
	return c
}

func usageRow(model string, n uint64) budget.UsageDelta {
	return budget.UsageDelta{Key: budget.UsageKey{Day: usageDay, Provider: "openai", Model: model, KeyID: "key_1"},
		Counts: budget.UsageCounts{Requests: n, Estimated: n / 2, Input: 10 * n, CachedInput: 4 * n, CacheCreation: 2 * n, Output: 3 * n, Reasoning: n}}
}

func wantUsage(t *testing.T, f *FSM, want ...budget.UsageDelta) {
	t.Helper()
	got := f.dayUsage(usageDay)
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestResentUsageCountsOnce: the usage in a flush counts exactly once by
// the same rule as its spend, class by class.
func TestResentUsageCountsOnce(t *testing.T) {
	cases := []struct {
		name    string
		applied []command
		want    []budget.UsageDelta
	}{
		{"acknowledged flushes add up", []command{usageFlush("s", 1, 0, 4), usageFlush("s", 2, 1, 2, 1)}, []budget.UsageDelta{usageRow("a", 6), usageRow("b", 1)}},
		{"timed out but applied, then resent with more", []command{usageFlush("s", 1, 0, 4), usageFlush("s", 2, 0, 6, 1)}, []budget.UsageDelta{usageRow("a", 6), usageRow("b", 1)}},
		{"a late copy after its resend", []command{usageFlush("s", 2, 0, 6), usageFlush("s", 1, 0, 4)}, []budget.UsageDelta{usageRow("a", 6)}},
		{"sessions are apart", []command{usageFlush("s", 1, 0, 4), usageFlush("r", 1, 0, 4)}, []budget.UsageDelta{usageRow("a", 8)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFSM()
			for _, cmd := range c.applied {
				applyCmd(t, f, cmd)
			}
			wantUsage(t, f, c.want...)
		})
	}
}

// TestUsageSnapshotRestores: a snapshot holds the usage rows and what a
// session's last flush covered of them; one written before the usage
// ledger existed still loads, with no rows.
func TestUsageSnapshotRestores(t *testing.T) {
	f := newFSM()
	applyCmd(t, f, usageFlush("s", 1, 0, 4, 2))
	applyCmd(t, f, usageFlush("s", 2, 0, 6, 2)) // in doubt: the session keeps what it covered
	first := persist(t, f)
	if !bytes.Contains(first, []byte(`"usage"`)) || !bytes.Contains(first, []byte(`"covered_usage"`)) {
		t.Fatalf("the snapshot holds no usage: %s", first)
	}
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(first))); err != nil {
		t.Fatal(err)
	}
	if again := persist(t, g); !bytes.Equal(first, again) {
		t.Fatalf("restored state persists differently:\n%s\n%s", first, again)
	}
	applyCmd(t, g, usageFlush("s", 3, 0, 6, 2)) // a resend of the one in doubt
	wantUsage(t, g, usageRow("a", 6), usageRow("b", 2))

	old := "\x01" + `{"index":7,"totals":[{"b":"daily","k":"a","w":1767225600,"n":5}],"suspensions":[],` +
		`"sessions":[{"id":"s","last":1,"base":0,"seen":1000,"covered":[{"b":"daily","k":"a","w":1767225600,"n":5}]}]}`
	h := newFSM()
	if err := h.Restore(io.NopCloser(strings.NewReader(old))); err != nil {
		t.Fatalf("a snapshot from before the usage ledger: %v", err)
	}
	if got := h.totals[budget.Key{Budget: "daily", Bucket: "a", Window: 1767225600}]; got != 5 || h.appliedIndex() != 7 {
		t.Fatalf("old snapshot: total %d index %d, want 5 and 7", got, h.appliedIndex())
	}
	applyCmd(t, h, usageFlush("s", 2, 1, 3))
	wantUsage(t, h, usageRow("a", 3))
}

// TestCompactionDropsOldUsage: rows of days before the cutoff go, later
// ones stay; a compaction entry from before the usage ledger (no cutoff)
// drops none.
func TestCompactionDropsOldUsage(t *testing.T) {
	f := newFSM()
	applyCmd(t, f, usageFlush("s", 1, 0, 4))
	older := usageFlush("s", 2, 1, 1)
	older.Batch.Usage[0].Day = usageDay - 86400
	applyCmd(t, f, older)
	applyCmd(t, f, command{Compact: &compaction{Windows: 0, Sessions: 0}})
	if n := len(f.usage); n != 2 {
		t.Fatalf("a compaction without a usage cutoff left %d rows, want 2", n)
	}
	applyCmd(t, f, command{Compact: &compaction{Usage: usageDay}})
	wantUsage(t, f, usageRow("a", 4))
	if n := len(f.usage); n != 1 {
		t.Fatalf("%d rows after compaction, want 1", n)
	}
}
