package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/admission/admissiontest"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
)

// recordingGate refuses the providers in refuse (Final for those in
// final) and records, in order, every admission and how each ticket was
// closed.
type recordingGate struct {
	refuse, final map[int]bool
	admissiontest.Journal
}

func (g *recordingGate) Admit(r *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	if r.Route != plan.RouteChatCompletions || !strings.Contains(string(r.Body), `"public"`) || r.Profile != 3 || r.Key != 5 {
		g.Add(fmt.Sprintf("bad request facts %+v", r))
	}
	if g.refuse[c.Provider] {
		g.Add("refuse " + c.Model)
		return nil, &admission.Refusal{Reason: "budget_exceeded", Final: g.final[c.Provider],
			Error: dialect.Errorf(http.StatusTooManyRequests, "budget_exceeded", "no room for %s", c.Model)}
	}
	g.Add("admit " + c.Model)
	return g.Ticket(c.Model), nil
}

// TestAdmissionSeam: each candidate is admitted just before it is first
// sent (its retries ride that admission); a refused one is passed over
// untried and counted; the abandoned candidate's claim is released before
// the next is priced; the served one is settled; every claim is closed
// exactly once.
func TestAdmissionSeam(t *testing.T) {
	ok, e503 := testkit.JSON(200, `{"answered":true}`), testkit.JSON(503, `{}`)
	refused := testkit.Reply{Err: errors.New("dial tcp: connection refused")}
	a := plan.Candidate{Provider: 0, Model: "a-model", Primary: true, Origin: "native"}
	b := plan.Candidate{Provider: 1, Model: "b-model", Origin: "native"}
	tests := []struct {
		name    string
		refuse  map[int]bool
		a, b    []testkit.Reply
		status  int
		aN, bN  int
		log     []string
		skipped float64
	}{
		{"served by the first", nil, []testkit.Reply{ok}, []testkit.Reply{ok}, 200, 1, 0,
			[]string{"admit a-model", "settle a-model 200"}, 0},
		{"retries ride one admission", nil, []testkit.Reply{e503, ok}, []testkit.Reply{ok}, 200, 2, 0,
			[]string{"admit a-model", "settle a-model 200"}, 0},
		{"failover moves the claim", nil, []testkit.Reply{e503}, []testkit.Reply{ok}, 200, 2, 1,
			[]string{"admit a-model", "release a-model", "admit b-model", "settle b-model 200"}, 0},
		{"refused primary passed over untried", map[int]bool{0: true}, []testkit.Reply{ok}, []testkit.Reply{ok}, 200, 0, 1,
			[]string{"refuse a-model", "admit b-model", "settle b-model 200"}, 1},
		{"refused failover: the gateway's error names both", map[int]bool{1: true}, []testkit.Reply{e503}, []testkit.Reply{ok}, 503, 2, 0,
			[]string{"admit a-model", "release a-model", "refuse b-model"}, 1},
		{"nothing admitted: the refusal is the answer", map[int]bool{0: true, 1: true}, []testkit.Reply{ok}, []testkit.Reply{ok}, 429, 0, 0,
			[]string{"refuse a-model", "refuse b-model"}, 2},
		{"nothing reached: released", nil, []testkit.Reply{refused}, []testkit.Reply{refused}, 502, 2, 1,
			[]string{"admit a-model", "release a-model", "admit b-model", "release b-model"}, 0},
		{"every upstream erred: the gateway answers, released", nil, []testkit.Reply{e503}, []testkit.Reply{e503}, 503, 2, 1,
			[]string{"admit a-model", "release a-model", "admit b-model", "release b-model"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &recordingGate{refuse: tt.refuse}
			m := metrics.New()
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": tt.a, "b.test": tt.b})
			res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`,
				cands: []plan.Candidate{a, b}, providers: testProviders(), gate: g, metrics: m,
				profile: 3, key: 5}.serve(t, up)
			if rec.Code != tt.status || res.Status != tt.status {
				t.Fatalf("status %d (result %d), want %d: %s", rec.Code, res.Status, tt.status, rec.Body)
			}
			if n, nb := len(up.Calls("a.test")), len(up.Calls("b.test")); n != tt.aN || nb != tt.bN {
				t.Errorf("calls a=%d b=%d, want %d %d", n, nb, tt.aN, tt.bN)
			}
			if !slices.Equal(g.Log, tt.log) {
				t.Errorf("gate saw\n  %q\nwant\n  %q", g.Log, tt.log)
			}
			skipped := testkit.Counter(t, m.Registry(), "pistra_failover_skipped_total", map[string]string{"reason": "budget_exceeded"})
			if skipped != tt.skipped {
				t.Errorf("pistra_failover_skipped_total %v, want %v", skipped, tt.skipped)
			}
		})
	}
}

// TestFinalRefusal: a Final refusal answers the request at once, untried
// candidates after it never asked, as long as nothing was sent; once a
// candidate was sent, a Final refusal of a later one only passes it over,
// and the answer is the gateway's, naming both.
func TestFinalRefusal(t *testing.T) {
	e503 := testkit.JSON(503, `{}`)
	a := plan.Candidate{Provider: 0, Model: "a-model", Primary: true, Origin: "native"}
	b := plan.Candidate{Provider: 1, Model: "b-model", Origin: "native"}
	tests := []struct {
		name          string
		refuse, final map[int]bool
		status        int
		aN            int
		log           []string
		message       string
	}{
		{"final primary: answered at once", map[int]bool{0: true}, map[int]bool{0: true}, 429, 0,
			[]string{"refuse a-model"}, "no room for a-model"},
		{"final after one passed over: answered at once", map[int]bool{0: true, 1: true}, map[int]bool{1: true}, 429, 0,
			[]string{"refuse a-model", "refuse b-model"}, "no room for b-model"},
		{"final after one sent: passed over", map[int]bool{1: true}, map[int]bool{1: true}, 503, 2,
			[]string{"admit a-model", "release a-model", "refuse b-model"}, "b-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &recordingGate{refuse: tt.refuse, final: tt.final}
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": {e503, e503}, "b.test": {testkit.JSON(200, `{}`)}})
			res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`,
				cands: []plan.Candidate{a, b}, providers: testProviders(), gate: g, profile: 3, key: 5}.serve(t, up)
			if rec.Code != tt.status || res.Status != tt.status || !strings.Contains(rec.Body.String(), tt.message) {
				t.Fatalf("status %d (result %d), want %d naming %q: %s", rec.Code, res.Status, tt.status, tt.message, rec.Body)
			}
			if n, nb := len(up.Calls("a.test")), len(up.Calls("b.test")); n != tt.aN || nb != 0 {
				t.Errorf("calls a=%d b=%d, want %d 0", n, nb, tt.aN)
			}
			if !slices.Equal(g.Log, tt.log) {
				t.Errorf("gate saw\n  %q\nwant\n  %q", g.Log, tt.log)
			}
		})
	}
}

// panickyBody is an upstream body whose read hits a bug after first.
type panickyBody struct{ first string }

func (b *panickyBody) Read(p []byte) (int, error) {
	if b.first == "" {
		panic("a bug in the relay")
	}
	n := copy(p, b.first)
	b.first = b.first[n:]
	return n, nil
}

func (*panickyBody) Close() error { return nil }

// panickyUpstream answers with contentType and a body that panics after
// first.
type panickyUpstream struct{ contentType, first string }

func (u panickyUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {u.contentType}}, Body: &panickyBody{first: u.first},
		ContentLength: -1, Request: r}, nil
}

// TestClaimClosedWhenServingPanics: a panic between admission and
// settlement still closes the claim, exactly once: given back when
// nothing was sent, settled when the answer had started.
func TestClaimClosedWhenServingPanics(t *testing.T) {
	for _, tt := range []struct {
		name string
		up   panickyUpstream
		want []string
	}{
		{"before the answer", panickyUpstream{contentType: "application/json"}, []string{"admit a-model", "release a-model"}},
		{"mid-stream", panickyUpstream{contentType: "text/event-stream", first: "data: {\"choices\":[]}\n\n"},
			[]string{"admit a-model", "settle a-model 200"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &recordingGate{}
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("no panic reached the caller")
					}
				}()
				call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{
					{Provider: 0, Model: "a-model", Primary: true}}, providers: testProviders(), gate: g, profile: 3, key: 5,
					transport: tt.up}.serve(t, nil)
			}()
			if !slices.Equal(g.Log, tt.want) {
				t.Errorf("gate saw %q, want %q", g.Log, tt.want)
			}
		})
	}
}

// TestFailoverPastStaticSkips: a failover provider the plan ruled out at
// build time is counted, with the reason it was ruled out, once the request
// fails over past its place in the primary's failover.to order.
func TestFailoverPastStaticSkips(t *testing.T) {
	for _, tt := range []struct {
		name  string
		to    []int
		count float64
	}{
		{"passed over on the way to b", []int{2, 1}, 1},
		{"b comes first: not passed", []int{1, 2}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			provs := testProviders()
			provs[0].Failover.To = tt.to
			provs[2] = plan.Provider{Name: "c", BaseURL: "http://c.test/v1", Pool: -1, Channels: provs[1].Channels}
			m := metrics.New()
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": {testkit.JSON(503, `{}`)}, "b.test": {testkit.JSON(200, `{}`)}})
			res, _ := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{a0, b1},
				providers: provs, metrics: m, skips: []plan.Skip{{Provider: 2, Channel: -1, Reason: "model_denied"}}}.serve(t, up)
			if res.Provider != "b" {
				t.Fatalf("served by %q", res.Provider)
			}
			got := testkit.Counter(t, m.Registry(), "pistra_failover_skipped_total", map[string]string{"provider": "c", "reason": "model_denied"})
			if got != tt.count {
				t.Errorf("counted %v, want %v", got, tt.count)
			}
		})
	}
}

// TestLastExcludedFailoverTargetCounted: a failover provider the plan
// always rules out, last in the primary's failover.to, is counted once the
// request went past every candidate it had (the last failure one the
// policy moves on from, or nothing admitted); not when a candidate served,
// a failure stopped the request, or the client left.
func TestLastExcludedFailoverTargetCounted(t *testing.T) {
	e503, e400 := testkit.JSON(503, `{}`), testkit.JSON(400, `{}`)
	for _, tt := range []struct {
		name   string
		a, b   testkit.Reply
		refuse map[int]bool
		gone   bool
		count  float64
	}{
		{"every candidate failed", e503, e503, nil, false, 1},
		{"nothing admitted", e503, e503, map[int]bool{0: true, 1: true}, false, 1},
		{"b served", e503, testkit.JSON(200, `{}`), nil, false, 0},
		{"a 400 stops the request", e503, e400, nil, false, 0},
		{"the client left", e503, testkit.SSE("data: {}\n\n"), nil, true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			provs := testProviders()
			provs[0].Retry, provs[0].Failover.To = plan.Retry{}, []int{1, 2}
			provs[2] = plan.Provider{Name: "c", BaseURL: "http://c.test/v1", Pool: -1, Channels: provs[1].Channels}
			m := metrics.New()
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": {tt.a}, "b.test": {tt.b}})
			call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{a0, b1},
				providers: provs, metrics: m, gate: &recordingGate{refuse: tt.refuse}, profile: 3, key: 5, gone: tt.gone,
				skips: []plan.Skip{{Provider: 2, Channel: -1, Reason: "model_denied"}}}.serve(t, up)
			got := testkit.Counter(t, m.Registry(), "pistra_failover_skipped_total", map[string]string{"provider": "c", "reason": "model_denied"})
			if got != tt.count {
				t.Errorf("counted %v, want %v", got, tt.count)
			}
		})
	}
}

// TestExcludedPrimaryCounted: a primary the plan ruled out for the
// caller is passed over first, counted with its reason, and its failover
// policy still governs the request.
func TestExcludedPrimaryCounted(t *testing.T) {
	provs := testProviders()
	provs[0].Failover.To = []int{1, 2}
	provs[2] = plan.Provider{Name: "c", BaseURL: "http://c.test/v1", Pool: -1, Channels: provs[1].Channels}
	m := metrics.New()
	up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {testkit.JSON(503, `{}`)}, "c.test": {testkit.JSON(200, `{}`)}})
	c2 := plan.Candidate{Provider: 2, Model: "c-model", Origin: "native"}
	res, _ := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{b1, c2},
		providers: provs, metrics: m, skips: []plan.Skip{{Provider: 0, Channel: -1, Reason: "model_denied"}}}.serve(t, up)
	if res.Provider != "c" {
		t.Fatalf("served by %q: the primary's failover policy moves a 503 on", res.Provider)
	}
	if n := testkit.Counter(t, m.Registry(), "pistra_failover_skipped_total", map[string]string{"provider": "a", "reason": "model_denied"}); n != 1 {
		t.Errorf("counted %v, want 1", n)
	}
}

// TestPreparedAwayCounted: a candidate Prepare passes over (a translation
// planned for another route, here) is counted like a gate's refusal.
func TestPreparedAwayCounted(t *testing.T) {
	m := metrics.New()
	up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {testkit.JSON(200, `{}`)}})
	translated := plan.Candidate{Provider: 0, Model: "t", Primary: true, Translate: plan.TranslateAnthropicOpenAI}
	res, _ := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{translated, b1},
		providers: testProviders(), metrics: m}.serve(t, up)
	if res.Provider != "b" {
		t.Fatalf("served by %q", res.Provider)
	}
	if n := testkit.Counter(t, m.Registry(), "pistra_failover_skipped_total", map[string]string{"provider": "a", "reason": "unsupported_candidate"}); n != 1 {
		t.Errorf("counted %v, want 1", n)
	}
}

// TestLongRetryAfterMovesOn: an upstream asking for a longer wait than the
// cap, when another provider could take the request, is not waited on: the
// request fails over at once, and the skipped retry is counted. With
// nowhere to go, the retry waits the cap as before.
func TestLongRetryAfterMovesOn(t *testing.T) {
	slow := testkit.JSON(503, `{}`, "Retry-After", "30")
	for _, tt := range []struct {
		name        string
		cands       []plan.Candidate
		aN, skipped float64
		served      string
	}{
		{"failover possible", []plan.Candidate{a0, b1}, 1, 1, "b"},
		{"nowhere to go", []plan.Candidate{a0}, 2, 0, "a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			up := testkit.NewUpstream(map[string][]testkit.Reply{"a.test": {slow}, "b.test": {testkit.JSON(200, `{}`)}})
			res, _ := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: tt.cands,
				providers: testProviders(), metrics: m}.serve(t, up)
			if got := float64(len(up.Calls("a.test"))); got != tt.aN || res.Provider != tt.served {
				t.Errorf("a called %v times, served by %q; want %v, %q", got, res.Provider, tt.aN, tt.served)
			}
			if n := testkit.Counter(t, m.Registry(), "pistra_retry_skipped_total", map[string]string{"reason": metrics.RetryAfterOverCap}); n != tt.skipped {
				t.Errorf("skipped %v, want %v", n, tt.skipped)
			}
		})
	}
}
