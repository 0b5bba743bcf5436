package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// TestReconcileThroughPistrad: traffic through a pistrad process to the
// fakes (streamed and not, cached input and reasoning, one failover that
// moves model and backend together), then the pistrac binary reconciles
// its usage ledger against the fakes' usage APIs: every class matches
// (exit 0); a skewed class drifts alone (exit 1); a provider still
// lagging is skipped, not a drift (exit 0); a day the provider dropped
// is missing on its side, not a drift; traffic sent to a fake around the
// gateway is named as unmetered. Each run's verdicts are in its textfile.
func TestReconcileThroughPistrad(t *testing.T) {
	skipNearDayEnd(t, 5*time.Minute)
	r := newReconcileRig(t)
	r.sendTraffic()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	day := today.Format(time.DateOnly)
	reasoning := map[string]uint64{}
	poll(t, 15*time.Second, "pistrad's usage ledger to hold the 7 requests", func() (bool, string) {
		rows, err := r.usage(day)
		var n uint64
		for _, row := range rows {
			n += row.Requests
			reasoning[row.Provider] += row.ReasoningTokens
		}
		return err == nil && n == 7, fmt.Sprintf("%+v %v", rows, err)
	})
	if reasoning["up-openai"] == 0 || reasoning["up-anthropic"] == 0 {
		t.Errorf("reasoning metered: %v, want some on both", reasoning)
	}

	// Two days on, the day has settled for every provider.
	asOf := today.Add(49 * time.Hour)
	r.at(asOf)
	prom := filepath.Join(t.TempDir(), "reconcile.prom")
	r.allMatch(day, asOf, prom)
	r.skewedClassDrifts(day, asOf, prom)
	r.lagAndDroppedDay(day, asOf, prom)
	r.trafficAroundTheGateway(day, asOf, prom)
}

// allMatch: every provider's rows of the day, each model on the key
// pistrad forwards with, match in every class (exit 0), the cache
// classes and request counts compared non-zero so each conversion is
// exercised; the failover's request is backup-openai's, as its model.
func (r *reconcileRig) allMatch(day string, asOf time.Time, prom string) {
	t := r.t
	t.Helper()
	code, rep := r.reconcile(day, asOf, prom)
	rows, days := rep.byProvider()
	if code != 0 || rep.Status != "match" {
		t.Fatalf("exit %d, status %s: %+v", code, rep.Status, rep)
	}
	wantRows := map[string][]string{
		"up-openai":     {"gpt-4o-mini", "text-embedding-3-small"},
		"backup-openai": {"backup-mini"},
		"up-anthropic":  {"claude-haiku-4-5", "claude-sonnet-4-5"},
	}
	seen := map[string]int64{}
	for provider, models := range wantRows {
		if len(rows[provider]) != len(models) || !strings.HasPrefix(days[provider], "match") {
			t.Errorf("%s: %s, rows %+v, want %v", provider, days[provider], rows[provider], models)
		}
		for _, m := range models {
			if _, ok := rows[provider][m+" "+reconcileKeyID(provider)]; !ok {
				t.Errorf("%s: no row of %s on its key: %+v", provider, m, rows[provider])
			}
		}
		for _, row := range rows[provider] {
			for _, c := range row.Classes {
				seen[provider+" "+c.Class] += c.Provider
			}
			if provider == "up-anthropic" && row.WorkspaceID != workspaceAnthropic {
				t.Errorf("%s %s: workspace %q, want %q", provider, row.Model, row.WorkspaceID, workspaceAnthropic)
			}
		}
	}
	for _, c := range []string{"up-openai cached_input", "up-openai output", "up-openai requests", "backup-openai requests",
		"up-anthropic cached_input", "up-anthropic cache_creation", "up-anthropic output"} {
		if seen[c] == 0 {
			t.Errorf("%s compared at 0 on the provider's side: the traffic should exercise it (%v)", c, seen)
		}
	}
	checkSamples(t, prom, `pistra_reconcile_verdict{provider="backup-openai",verdict="match"} 1`, "pistra_reconcile_status 0")
}

// sendTraffic is 7 requests through pistrad, each answered: OpenAI chat
// (with reasoning and a cache hit), streamed chat, Responses, embeddings;
// a chat that fails twice on up-openai and is answered by backup-openai
// as its own model; Anthropic messages with cache writes and reads and
// thinking, and a streamed one.
func (r *reconcileRig) sendTraffic() {
	r.t.Helper()
	r.openAI("chat/completions", `{"model":"gpt-4o-mini","reasoning_effort":"low","messages":[{"role":"user","content":"a prompt long enough to be split between cached and fresh tokens"}]}`)
	stream := string(r.openAI("chat/completions", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"streamed"}]}`))
	if !strings.Contains(stream, `"usage":{`) {
		r.t.Fatalf("the stream carries no usage:\n%s", stream)
	}
	r.openAI("responses", `{"model":"gpt-4o-mini","input":"hello there"}`)
	r.openAI("embeddings", `{"model":"text-embedding-3-small","input":["one","two three"]}`)
	if err := r.openai.SetFaults(fakeprovider.Faults{FailStatus: 503, FailCount: 2}); err != nil {
		r.t.Fatal(err)
	}
	before := len(r.backup.Requests())
	r.openAI("chat/completions", `{"model":"fast","messages":[{"role":"user","content":"moved on"}]}`)
	if calls := r.backup.Requests(); len(calls) != before+1 || calls[len(calls)-1].Model != "backup-mini" {
		r.t.Fatalf("the failover: backup-openai calls %d (was %d)", len(calls), before)
	}
	r.messages(`{"model":"claude-sonnet-4-5","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"system":[{"type":"text","text":"a cached system prompt of some length","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`)
	events := string(r.messages(`{"model":"claude-haiku-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"streamed"}]}`))
	if !strings.Contains(events, "message_delta") {
		r.t.Fatalf("not a stream:\n%s", events)
	}
}

// skewedClassDrifts: the OpenAI fake reports output 10% over what it
// answered: that class of that row drifts, exit 1, the rest match.
func (r *reconcileRig) skewedClassDrifts(day string, asOf time.Time, prom string) {
	t := r.t
	t.Helper()
	setReport(t, r.openai, fakeprovider.Report{Skew: &fakeprovider.Skew{Class: "output", Factor: 1.1}})
	code, rep := r.reconcile(day, asOf, prom)
	rows, _ := rep.byProvider()
	if code != 1 || rep.Status != "drift" {
		t.Fatalf("skewed output: exit %d, status %s", code, rep.Status)
	}
	for provider, byModel := range rows {
		for name, row := range byModel {
			for _, c := range row.Classes {
				want := "match"
				if provider == "up-openai" && c.Class == "output" && strings.HasPrefix(name, "gpt-4o-mini") {
					want = "drift"
				}
				if c.Verdict != want {
					t.Errorf("skewed output: %s %s %s: %s (%d vs %d), want %s", provider, name, c.Class, c.Verdict, c.Pistra, c.Provider, want)
				}
			}
		}
	}
	checkSamples(t, prom, `pistra_reconcile_verdict{provider="up-openai",verdict="drift"} 1`,
		`pistra_reconcile_verdict{provider="up-anthropic",verdict="match"} 1`, "pistra_reconcile_status 1")
	setReport(t, r.openai, fakeprovider.Report{})
}

// lagAndDroppedDay: backup-openai not yet reporting the day is skipped
// as lagging and the run still matches; up-anthropic reporting the day
// empty is missing on its side, said so, and no class is called a drift.
func (r *reconcileRig) lagAndDroppedDay(day string, asOf time.Time, prom string) {
	t := r.t
	t.Helper()
	setReport(t, r.backup, fakeprovider.Report{LagHours: 50})
	code, rep := r.reconcile(day, asOf, prom)
	_, days := rep.byProvider()
	if code != 0 || !strings.Contains(days["backup-openai"], "skipped") || !strings.Contains(days["backup-openai"], "lagging") {
		t.Errorf("lagging: exit %d, backup-openai %q", code, days["backup-openai"])
	}
	checkSamples(t, prom, `pistra_reconcile_verdict{provider="backup-openai",verdict="skipped"} 1`, "pistra_reconcile_status 0")

	setReport(t, r.anthropic, fakeprovider.Report{DropDays: []string{day}})
	code, rep = r.reconcile(day, asOf, prom)
	rows, _ := rep.byProvider()
	if code != 1 || len(rows["up-anthropic"]) != 2 {
		t.Fatalf("dropped day: exit %d, rows %+v", code, rows["up-anthropic"])
	}
	for name, row := range rows["up-anthropic"] {
		if row.Verdict != "missing_provider" || !strings.Contains(strings.Join(row.Why, " "), "no usage at all this day") {
			t.Errorf("dropped day: %s: %s %v, want missing_provider for the whole day", name, row.Verdict, row.Why)
		}
	}
	for provider, byModel := range rows {
		for name, row := range byModel {
			for _, c := range row.Classes {
				if c.Verdict == "drift" {
					t.Errorf("dropped day: %s %s %s called a drift", provider, name, c.Class)
				}
			}
		}
	}
	setReport(t, r.backup, fakeprovider.Report{})
	setReport(t, r.anthropic, fakeprovider.Report{})
}

// trafficAroundTheGateway: a request sent straight to the OpenAI fake on
// a key pistra never uses is named as unmetered; pistra's rows match.
func (r *reconcileRig) trafficAroundTheGateway(day string, asOf time.Time, prom string) {
	t := r.t
	t.Helper()
	const around = "sk-around-the-gateway"
	r.at(time.Now()) // sent today, as the gateway's traffic was
	r.post(r.urls.OpenAI+"/chat/completions", http.Header{"Authorization": {"Bearer " + around}},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"not through pistra"}]}`)
	r.at(asOf)
	code, rep := r.reconcile(day, asOf, prom)
	rows, _ := rep.byProvider()
	if code != 1 {
		t.Errorf("unmetered traffic: exit %d, want 1", code)
	}
	other := fakeprovider.KeyID(fakeprovider.DialectOpenAI, around)
	row, ok := rows["up-openai"]["gpt-4o-mini "+other]
	if !ok || row.Verdict != "unmetered" || !strings.Contains(strings.Join(row.Why, " "), "never used") {
		t.Errorf("the row of key %s: %+v (%v)", other, row, ok)
	}
	for provider, byModel := range rows {
		for name, row := range byModel {
			if row.KeyID != other && row.Verdict != "match" {
				t.Errorf("with unmetered traffic beside it: %s %s: %s", provider, name, row.Verdict)
			}
		}
	}
	checkSamples(t, prom, `pistra_reconcile_rows{provider="up-openai",verdict="unmetered"} 1`)
}

func setReport(t *testing.T, f *fakeprovider.Server, rep fakeprovider.Report) {
	t.Helper()
	if err := f.SetReport(rep); err != nil {
		t.Fatal(err)
	}
}

// checkSamples holds the textfile to carry each sample line in want.
func checkSamples(t *testing.T, path string, want ...string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || l == w
		}
		if !found {
			t.Errorf("the textfile lacks %q:\n%s", w, raw)
		}
	}
}
