package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/meter"
)

// rowWith returns the row of day d whose model is model.
func rowWith(t *testing.T, d DayReport, model string) RowReport {
	t.Helper()
	for _, r := range d.Rows {
		if r.Model == model {
			return r
		}
	}
	t.Fatalf("%s: no row of %s in %+v", d.Day, model, d.Rows)
	return RowReport{}
}

// TestReconcileSkewedClassDrifts: the provider reporting output 10% over
// what it answered drifts in output alone, the other classes matching;
// requests settled at the estimate are named as the likely cause.
func TestReconcileSkewedClassDrifts(t *testing.T) {
	w := newWorld(t, day1.Add(9*time.Hour))
	w.traffic()
	// One request whose answer pistra could not read: counted, settled at
	// the estimate, its tokens in no class; the provider billed them.
	w.through("anthropic", "claude-haiku-4-5", "/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"a second one"}]}`, meter.ShapeMessages, true)
	if err := w.openai.SetReport(fakeprovider.Report{Skew: &fakeprovider.Skew{Class: "output", Factor: 1.1}}); err != nil {
		t.Fatal(err)
	}
	w.at(day1.Add(49 * time.Hour))
	rep := w.reconcile(day1, day1, 0)
	if rep.Status != StatusDrift {
		t.Fatalf("status %s, want drift", rep.Status)
	}
	days := rowsOf(rep)
	chat := rowWith(t, days["openai"]["2026-11-10"], "gpt-4o-mini")
	for _, c := range chat.Classes {
		want := Match
		if c.Class == ClassOutput {
			want = Drift
			if c.Diff <= 0 || c.RelDiff < 0.05 || c.RelDiff > 0.1 {
				t.Errorf("output: diff %d rel %.3f, want the provider about 10%% over", c.Diff, c.RelDiff)
			}
		}
		if c.Verdict != want {
			t.Errorf("openai %s: %s, want %s (%+v)", c.Class, c.Verdict, want, c)
		}
	}
	if chat.Verdict != Drift {
		t.Errorf("row verdict %s, want drift", chat.Verdict)
	}
	haiku := rowWith(t, days["anthropic"]["2026-11-10"], "claude-haiku-4-5")
	if haiku.Verdict != Drift || !strings.Contains(strings.Join(haiku.Why, " "), "settled at the estimate") {
		t.Errorf("haiku with an estimated request: %s %v, want a drift explained by the estimate", haiku.Verdict, haiku.Why)
	}
}

// TestReconcileDroppedDayAndLag: a day the provider reports nothing for
// is missing on its side, said so, not a drift of its classes; a provider
// whose usage still lags is skipped for the days it has not reported,
// and a day inside the settle delay is skipped too.
func TestReconcileDroppedDayAndLag(t *testing.T) {
	w := newWorld(t, day1.Add(9*time.Hour))
	w.traffic()
	day2 := day1.AddDate(0, 0, 1)
	w.at(day2.Add(9 * time.Hour))
	w.traffic()
	if err := w.openai.SetReport(fakeprovider.Report{DropDays: []string{"2026-11-10"}}); err != nil {
		t.Fatal(err)
	}
	// Two days and a half later the provider has reported day1 only.
	now := day2.Add(60 * time.Hour)
	if err := w.anthropic.SetReport(fakeprovider.Report{LagHours: int(now.Sub(day2) / time.Hour)}); err != nil {
		t.Fatal(err)
	}
	w.at(now)
	rep := w.reconcile(day1, day2.AddDate(0, 0, 1), 0)
	days := rowsOf(rep)
	dropped := days["openai"]["2026-11-10"]
	for _, r := range dropped.Rows {
		if r.Verdict != MissingProvider || !strings.Contains(strings.Join(r.Why, " "), "no usage at all this day") {
			t.Errorf("dropped day: %s %s %v, want missing_provider for the whole day", r.Model, r.Verdict, r.Why)
		}
	}
	if len(dropped.Rows) == 0 || days["openai"]["2026-11-11"].Verdict != Match {
		t.Errorf("openai: %+v", days["openai"])
	}
	if d := days["anthropic"]["2026-11-10"]; d.Verdict != Match {
		t.Errorf("anthropic day1, reported before the lag: %+v", d)
	}
	if d := days["anthropic"]["2026-11-11"]; d.Verdict != Skipped || !strings.Contains(d.Skipped, "lagging") {
		t.Errorf("anthropic day2, inside the lag: %+v, want skipped as lagging", d)
	}
	if d := days["openai"]["2026-11-12"]; d.Verdict != Skipped || !strings.Contains(d.Skipped, "too recent") {
		t.Errorf("today: %+v, want skipped as too recent", d)
	}
	if rep.Status != StatusDrift {
		t.Errorf("status %s: a dropped day is not a match", rep.Status)
	}
}

// TestReconcileUnmetered: traffic sent straight to the provider on a key
// pistra never used is named as unmetered; pistra's own rows still match.
func TestReconcileUnmetered(t *testing.T) {
	w := newWorld(t, day1.Add(9*time.Hour))
	w.traffic()
	w.post("openai", "sk-someone-else", "/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"around the gateway"}]}`)
	w.at(day1.Add(49 * time.Hour))
	d := rowsOf(w.reconcile(day1, day1, 0))["openai"]["2026-11-10"]
	other := fakeprovider.KeyID(fakeprovider.DialectOpenAI, "sk-someone-else")
	found := false
	for _, r := range d.Rows {
		switch {
		case r.KeyID == other:
			found = true
			if r.Verdict != Unmetered || !strings.Contains(strings.Join(r.Why, " "), "never used") {
				t.Errorf("the other key's row: %s %v, want unmetered", r.Verdict, r.Why)
			}
		case r.Verdict != Match:
			t.Errorf("%s %s: %s, want match", r.Model, r.KeyID, r.Verdict)
		}
	}
	if !found {
		t.Fatalf("no row of key %s: %+v", other, d.Rows)
	}
}

// TestReconcileReadsEveryPage: a month of daily traffic read seven
// buckets a page is judged whole, every day matching.
func TestReconcileReadsEveryPage(t *testing.T) {
	month := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	w := newWorld(t, month)
	for d := range 31 {
		w.at(month.AddDate(0, 0, d).Add(time.Duration(d) * 30 * time.Minute))
		w.through("openai", "gpt-4o-mini", "/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"day `+strings.Repeat("x ", d+1)+`"}]}`, meter.ShapeChat, false)
		w.through("anthropic", "claude-haiku-4-5", "/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"day `+strings.Repeat("y ", d+1)+`"}]}`, meter.ShapeMessages, false)
	}
	w.at(month.AddDate(0, 1, 2))
	rep := w.reconcile(month, month.AddDate(0, 0, 30), 7)
	if rep.Status != StatusMatch {
		t.Fatalf("status %s", rep.Status)
	}
	for _, p := range rep.Providers {
		if len(p.Days) != 31 {
			t.Fatalf("%s: %d days", p.Provider, len(p.Days))
		}
		for _, d := range p.Days {
			if d.Verdict != Match || len(d.Rows) != 1 {
				t.Errorf("%s %s: %s, %d rows", p.Provider, d.Day, d.Verdict, len(d.Rows))
			}
		}
	}
}
