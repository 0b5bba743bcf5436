package reconcile

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/meter"
)

const (
	trafficKey = "sk-traffic"
	adminKey   = "sk-admin"
)

// world is both fake providers on one clock, and pistra's side as the
// gateway's metering would have it: each answer the test sends through
// "pistra" is read with the gateway's own usage reader and counted in
// its row.
type world struct {
	t                 *testing.T
	clock             atomic.Int64
	openai, anthropic *fakeprovider.Server
	oBase, aBase      string
	rows              ledgerRows
}

func newWorld(t *testing.T, start time.Time) *world {
	w := &world{t: t, rows: ledgerRows{}}
	w.clock.Store(start.Unix())
	w.openai, w.oBase = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, AdminKey: adminKey, Now: w.now, Usage: fakeprovider.Usage{Split: true}})
	w.anthropic, w.aBase = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, AdminKey: adminKey, Now: w.now})
	return w
}

func (w *world) at(t time.Time) { w.clock.Store(t.Unix()) }

// now is the world's clock, the fakes' and pistra's.
func (w *world) now() time.Time { return time.Unix(w.clock.Load(), 0) }

// post sends body to the fake of provider on key and returns the answer.
func (w *world) post(provider, key, path, body string) []byte {
	w.t.Helper()
	base := w.oBase
	h := http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
	if provider == "anthropic" {
		base, h = w.aBase, http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	}
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewBufferString(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		w.t.Fatalf("%s %s: %d %s", provider, path, resp.StatusCode, raw)
	}
	return raw
}

// through sends a request as pistra forwards it and meters the answer as
// pistra does; a request whose answer pistra could not read usage from is
// passed estimated.
func (w *world) through(provider, model, path, body string, shape meter.Shape, estimated bool) {
	w.t.Helper()
	w.throughOn(provider, trafficKey, model, path, body, shape, estimated)
}

// throughOn is through on the provider key secret.
func (w *world) throughOn(provider, key, model, path, body string, shape meter.Shape, estimated bool) {
	w.t.Helper()
	raw := w.post(provider, key, path, body)
	u, err := meter.ReadAnswer(shape, raw)
	if err != nil || !u.Reported {
		w.t.Fatalf("%s: no usage read: %v %s", path, err, raw)
	}
	d := fakeprovider.DialectOpenAI
	if provider == "anthropic" {
		d = fakeprovider.DialectAnthropic
	}
	now := time.Unix(w.clock.Load(), 0)
	g := Group{Model: model, KeyID: fakeprovider.KeyID(d, key)}
	w.rows.add(day(now), provider, g, u, estimated)
}

// ledgerRows is an in-memory PistraSource, rows by day.
type ledgerRows map[time.Time]map[string]map[Group]*PistraRow

func (l ledgerRows) add(d time.Time, provider string, g Group, u meter.Usage, estimated bool) {
	if l[d] == nil {
		l[d] = map[string]map[Group]*PistraRow{}
	}
	if l[d][provider] == nil {
		l[d][provider] = map[Group]*PistraRow{}
	}
	r := l[d][provider][g]
	if r == nil {
		r = &PistraRow{Provider: provider, Group: g}
		l[d][provider][g] = r
	}
	r.Requests++
	if estimated {
		r.Estimated++
		return
	}
	r.Input += int64(u.InputTokens)
	r.CachedInput += int64(u.CachedInputTokens)
	r.CacheCreation += int64(u.CacheCreationInputTokens)
	r.Output += int64(u.OutputTokens)
	r.Reasoning += int64(u.ReasoningTokens)
}

func (l ledgerRows) Rows(_ context.Context, d time.Time) ([]PistraRow, error) {
	var out []PistraRow
	for _, byGroup := range l[d] {
		for _, r := range byGroup {
			out = append(out, *r)
		}
	}
	return out, nil
}

// traffic is a day's mix: OpenAI chat with cached input and reasoning,
// Responses, embeddings; Anthropic messages with cache reads and writes
// and thinking.
func (w *world) traffic() {
	w.t.Helper()
	w.through("openai", "gpt-4o-mini", "/chat/completions", `{"model":"gpt-4o-mini","reasoning_effort":"low","messages":[{"role":"user","content":"a long enough prompt to be split between cached and fresh tokens, twice over"}]}`, meter.ShapeChat, false)
	w.through("openai", "gpt-4o-mini", "/responses", `{"model":"gpt-4o-mini","input":"hello there"}`, meter.ShapeResponses, false)
	w.through("openai", "text-embedding-3-small", "/embeddings", `{"model":"text-embedding-3-small","input":["one","two three"]}`, meter.ShapeChat, false)
	w.through("anthropic", "claude-sonnet-4-5", "/messages", `{"model":"claude-sonnet-4-5","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"system":[{"type":"text","text":"a cached system prompt of some length","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`, meter.ShapeMessages, false)
	w.through("anthropic", "claude-haiku-4-5", "/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"plain"}]}`, meter.ShapeMessages, false)
}

func (w *world) providers(pageSize int) []Provider {
	return []Provider{
		{Name: "openai", API: "openai", Tolerance: 0.01, SettleDelay: 24 * time.Hour, Source: &OpenAI{BaseURL: w.oBase, AdminKey: adminKey, PageSize: pageSize}},
		{Name: "anthropic", API: "anthropic", Tolerance: 0.01, SettleDelay: 24 * time.Hour, Workspaces: true, Source: &Anthropic{BaseURL: w.aBase, AdminKey: adminKey, PageSize: pageSize}},
	}
}

func (w *world) reconcile(from, to time.Time, pageSize int) Report {
	w.t.Helper()
	rep, err := Run{Pistra: w.rows, Providers: w.providers(pageSize), From: from, To: to, Now: time.Unix(w.clock.Load(), 0)}.Reconcile(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}

// rowsOf collects the rows of a report by provider and day.
func rowsOf(rep Report) map[string]map[string]DayReport {
	out := map[string]map[string]DayReport{}
	for _, p := range rep.Providers {
		out[p.Provider] = map[string]DayReport{}
		for _, d := range p.Days {
			out[p.Provider][d.Day] = d
		}
	}
	return out
}

var day1 = time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)

// TestReconcileMatchesTheFakes: a day of mixed traffic on both providers,
// metered by the gateway's own reader, matches each usage API in every
// class it reports once converted (Anthropic's uncached input plus its
// cache reads and writes is pistra's input), the cache classes non-zero
// so the conversion is exercised.
func TestReconcileMatchesTheFakes(t *testing.T) {
	w := newWorld(t, day1.Add(9*time.Hour))
	w.traffic()
	w.at(day1.Add(49 * time.Hour))
	rep := w.reconcile(day1, day1, 0)
	if rep.Status != StatusMatch {
		t.Fatalf("status %s, want match: %+v", rep.Status, rep)
	}
	seen := map[Class]int64{}
	for _, p := range rep.Providers {
		if len(p.Days) != 1 || p.Days[0].Verdict != Match || len(p.Days[0].Rows) == 0 {
			t.Fatalf("%s: %+v", p.Provider, p.Days)
		}
		for _, r := range p.Days[0].Rows {
			for _, c := range r.Classes {
				seen[Class(p.Provider)+":"+c.Class] += c.Provider
			}
		}
	}
	for _, want := range []Class{"openai:input", "openai:cached_input", "openai:output", "openai:requests", "anthropic:cached_input", "anthropic:cache_creation", "anthropic:output"} {
		if seen[want] == 0 {
			t.Errorf("%s: compared as 0 on the provider's side; the test traffic should exercise it (%v)", want, seen)
		}
	}
	if _, ok := seen["anthropic:requests"]; ok {
		t.Error("anthropic's usage report has no request count, yet requests were compared")
	}
}
