package reconcile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestJudgeTolerance: the relative difference is over the larger side, a
// class matches up to the tolerance and drifts past it, both sides zero
// match, one side zero is a full difference.
func TestJudgeTolerance(t *testing.T) {
	cases := []struct {
		pistra, provider int64
		tol              float64
		rel              float64
		want             Verdict
	}{
		{1000, 1000, 0, 0, Match},
		{1000, 1010, 0.01, 10.0 / 1010, Match},
		{1000, 1011, 0.01, 11.0 / 1011, Drift},
		{1000, 1020, 0.01, 20.0 / 1020, Drift},
		{1020, 1000, 0.01, 20.0 / 1020, Drift},
		{0, 0, 0, 0, Match},
		{0, 5, 0.5, 1, Drift},
	}
	for _, c := range cases {
		got := judge(ClassOutput, c.pistra, c.provider, c.tol)
		if got.Verdict != c.want || got.Diff != c.provider-c.pistra || got.RelDiff != c.rel {
			t.Errorf("judge(%d, %d, %g) = %+v, want %s at %g", c.pistra, c.provider, c.tol, got, c.want, c.rel)
		}
	}
}

// TestJudgeDayExplains: each one-sided row gets the verdict and reason
// the day's data supports, and a per-model day (no key ids known) never
// calls a row unmetered.
func TestJudgeDayExplains(t *testing.T) {
	classes := []Class{ClassInput, ClassOutput}
	mine, theirs := Group{Model: "m", KeyID: "key_mine"}, Group{Model: "m", KeyID: "key_theirs"}
	onlyPistra := Group{Model: "n", KeyID: "key_mine"}
	rows := judgeDay(dayInput{
		pistra:    map[Group]PistraRow{mine: {Totals: Totals{Input: 10, Output: 5}}, onlyPistra: {Totals: Totals{Input: 1}}},
		provider:  map[Group]Totals{mine: {Input: 10, Output: 5}, theirs: {Input: 3}, {Model: "o", KeyID: "key_mine"}: {Output: 2}},
		knownKeys: map[string]string{"key_mine": ""}, classes: classes, tol: 0,
	})
	want := map[Group]Verdict{mine: Match, theirs: Unmetered, onlyPistra: MissingProvider, {Model: "o", KeyID: "key_mine"}: MissingPistra}
	if len(rows) != len(want) {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.Verdict != want[r.Group] {
			t.Errorf("%+v: %s, want %s (%v)", r.Group, r.Verdict, want[r.Group], r.Why)
		}
	}
	console := judgeDay(dayInput{provider: map[Group]Totals{{Model: "m"}: {Input: 3}}, knownKeys: map[string]string{"key_mine": ""}, classes: classes})
	if len(console) != 1 || console[0].Verdict != Unmetered || !strings.Contains(console[0].Why[0], "no API key") {
		t.Errorf("usage under no key: %+v", console)
	}
	empty := judgeDay(dayInput{provider: map[Group]Totals{{Model: "m"}: {Input: 3}}, pistraDayEmpty: true, classes: classes})
	if len(empty) != 1 || empty[0].Verdict != MissingPistra || !strings.Contains(empty[0].Why[0], "no rows at all") {
		t.Errorf("a day pistra has no rows for: %+v", empty)
	}
}

// TestReportFormats: the text names the verdict of every class of a row
// that does not match and why; the JSON carries the same figures.
func TestReportFormats(t *testing.T) {
	row := compareRow(Group{Model: "m"}, PistraRow{Totals: Totals{Requests: 3, Output: 90}, Estimated: 1}, Totals{Requests: 3, Output: 100}, []Class{ClassOutput, ClassRequests}, 0.01)
	rep := Report{From: "2026-11-10", To: "2026-11-10", Status: StatusDrift, Providers: []ProviderReport{{Provider: "p", API: "openai", SettleDelay: "24h0m0s", Tolerance: 0.01,
		Days: []DayReport{{Day: "2026-11-10", Verdict: Drift, Rows: []RowReport{row}}, {Day: "2026-11-11", Verdict: Skipped, Skipped: "too recent"}}}}}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{": drift", "output", "pistra         90  provider        100  diff       +10", "drift", "settled at the estimate", "2026-11-11  skipped: too recent"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	c := back.Providers[0].Days[0].Rows[0].Classes[0]
	if c.Class != ClassOutput || c.Pistra != 90 || c.Provider != 100 || c.Verdict != Drift || back.Status != StatusDrift {
		t.Errorf("json round trip: %+v", back)
	}
}
