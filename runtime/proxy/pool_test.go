package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
)

// scriptedPools is a Pools whose picks are scripted: the nth Pick gives
// picks[n] (the last repeats), or the refusal when refuse is set. It
// records every request it was asked and, in order, what each pick heard.
type scriptedPools struct {
	picks  [][]string
	model  string
	refuse *admission.Refusal

	mu   sync.Mutex
	reqs []PoolRequest
	log  []string
}

func (s *scriptedPools) Pick(_ context.Context, _ *plan.Graph, provider int, r *PoolRequest) (PoolPick, *admission.Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := *r
	q.Exclude, q.Body = slices.Clone(r.Exclude), slices.Clone(r.Body)
	s.reqs = append(s.reqs, q)
	if s.refuse != nil {
		s.log = append(s.log, fmt.Sprintf("refuse %d", provider))
		return nil, s.refuse
	}
	n := len(s.reqs)
	eps := s.picks[min(n, len(s.picks))-1]
	s.log = append(s.log, fmt.Sprintf("pick%d %s", n, strings.Join(eps, ",")))
	return &scriptedPick{s: s, n: n, endpoints: eps}, nil
}

func (s *scriptedPools) add(entry string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, entry)
}

type scriptedPick struct {
	s         *scriptedPools
	n         int
	endpoints []string
}

func (p *scriptedPick) Endpoints() []string { return p.endpoints }
func (p *scriptedPick) Model() string       { return p.s.model }
func (p *scriptedPick) Served(endpoint string, status int) {
	p.s.add(fmt.Sprintf("served%d %s %d", p.n, endpoint, status))
}
func (p *scriptedPick) Done() { p.s.add(fmt.Sprintf("done%d", p.n)) }

const (
	memberA = "10.0.0.1:8000"
	memberB = "10.0.0.2:8000"
)

// poolProviders are a pool-backed primary (retries as retry says, failing
// over to b on 5xx and connect) and the hosted b.
func poolProviders(retry plan.Retry) ([]plan.Provider, []plan.Pool) {
	provs := testProviders()
	provs[2] = plan.Provider{Name: "gpus", Pool: 0, Channels: provs[0].Channels, Retry: retry,
		Failover: plan.Failover{To: []int{1}, On: []plan.FailureClass{plan.FailureConnect, plan.Failure5xx}}}
	return provs, []plan.Pool{{Name: "gpus", DNS: "vllm.test:8000", Scheme: "http", Subsets: []plan.Subset{{Name: "h100", DNS: "h100.test:8000"}}}}
}

var (
	pooled = plan.Candidate{Provider: 2, Model: "llama", Primary: true, Origin: "native", PoolSubset: "h100"}
	hosted = plan.Candidate{Provider: 1, Model: "b-model", Origin: "native"}
)

// TestPoolAttempts: a pooled candidate is sent to the member its pick
// names, on the channel's route there; a member that does not take the
// connection hands the attempt to the next of the pick (not a retry); a
// retry goes to a member not tried yet, through a new pick excluding the
// one tried; the member whose answer is relayed is named to its pick and
// in Pistra-Endpoint; every pick is done exactly once.
func TestPoolAttempts(t *testing.T) {
	ok, e503 := testkit.JSON(200, `{"answered":true}`), testkit.JSON(503, `{}`)
	refused := testkit.Reply{Err: errors.New("dial tcp: connection refused")}
	retryOnce := plan.Retry{Max: 1, BackoffMS: 1, On: []plan.FailureClass{plan.Failure5xx}}
	tests := []struct {
		name     string
		retry    plan.Retry
		picks    [][]string
		a, b     []testkit.Reply
		endpoint string
		calls    []string // members dialled, in order
		retries  float64
		log      []string
	}{
		{"the picked member serves", plan.Retry{}, [][]string{{memberA}}, []testkit.Reply{ok}, nil, memberA,
			[]string{memberA}, 0, []string{"pick1 " + memberA, "served1 " + memberA + " 200", "done1"}},
		{"a member down: the next of the pick, no retry", plan.Retry{}, [][]string{{memberA, memberB}},
			[]testkit.Reply{refused}, []testkit.Reply{ok}, memberB,
			[]string{memberA, memberB}, 0, []string{"pick1 " + memberA + "," + memberB, "served1 " + memberB + " 200", "done1"}},
		{"a retry goes to another member, by a new pick", retryOnce, [][]string{{memberA}, {memberB}},
			[]testkit.Reply{e503}, []testkit.Reply{ok}, memberB,
			[]string{memberA, memberB}, 1, []string{"pick1 " + memberA, "pick2 " + memberB, "done1", "served2 " + memberB + " 200", "done2"}},
		{"a retry walks the pick's list first", retryOnce, [][]string{{memberA, memberB}},
			[]testkit.Reply{e503}, []testkit.Reply{ok}, memberB,
			[]string{memberA, memberB}, 1, []string{"pick1 " + memberA + "," + memberB, "served1 " + memberB + " 200", "done1"}},
		{"the lone member's error is relayed and named", plan.Retry{}, [][]string{{memberA}}, []testkit.Reply{testkit.JSON(400, `{}`)}, nil, memberA,
			[]string{memberA}, 0, []string{"pick1 " + memberA, "served1 " + memberA + " 400", "done1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			provs, pools := poolProviders(tt.retry)
			picker := &scriptedPools{picks: tt.picks}
			m := metrics.New()
			up := testkit.NewUpstream(map[string][]testkit.Reply{memberA: tt.a, memberB: tt.b})
			res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`,
				header: map[string]string{"Authorization": "Bearer client-key", "User-Agent": "sdk/1"},
				cands:  []plan.Candidate{pooled}, providers: provs, pools: pools, picker: picker, metrics: m}.serve(t, up)
			if res.Endpoint != tt.endpoint || rec.Header().Get(record.HeaderEndpoint) != tt.endpoint || res.Provider != "gpus" {
				t.Fatalf("served by %q on %q (header %q): %d %s", res.Provider, res.Endpoint, rec.Header().Get(record.HeaderEndpoint), rec.Code, rec.Body)
			}
			var dialled []string
			for _, ep := range []string{memberA, memberB} {
				for _, c := range up.Calls(ep) {
					dialled = append(dialled, ep)
					if c.Path != "/v1/chat/completions" || c.Body != `{"model":"llama","messages":[]}` {
						t.Errorf("%s got %s %s", ep, c.Path, c.Body)
					}
				}
			}
			if !slices.Equal(dialled, tt.calls) || res.Attempts != len(tt.calls) {
				t.Errorf("dialled %v in %d attempts, want %v", dialled, res.Attempts, tt.calls)
			}
			if n := testkit.Counter(t, m.Registry(), "pistra_retry_total", nil); n != tt.retries {
				t.Errorf("retries %v, want %v", n, tt.retries)
			}
			if !slices.Equal(picker.log, tt.log) {
				t.Errorf("picks heard %q, want %q", picker.log, tt.log)
			}
			q := picker.reqs[0]
			if q.Subset != "h100" || q.Model != "llama" || q.RequestID != "req_t" || string(q.Body) != `{"model":"llama","messages":[]}` ||
				q.Header.Get("Authorization") != "" || q.Header.Get("X-Request-Id") != "req_t" || q.Header.Get("User-Agent") != "sdk/1" || len(q.Exclude) != 0 {
				t.Errorf("first pick asked %+v", q)
			}
			if len(picker.reqs) > 1 && (!slices.Equal(picker.reqs[1].Exclude, []string{memberA}) || string(picker.reqs[1].Body) != string(q.Body)) {
				t.Errorf("the retry's pick asked %+v", picker.reqs[1])
			}
		})
	}
}

// TestPoolPickRefused: a refused pick passes the pooled candidate over
// untried, counted by its reason, and the failover serves; with nothing
// else to try the refusal is the answer. No pick was made, so none is
// done.
func TestPoolPickRefused(t *testing.T) {
	no := &admission.Refusal{Reason: "pool_no_member",
		Error: dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeUpstreamUnreachable, "no member of pool gpus")}
	for _, tt := range []struct {
		name   string
		cands  []plan.Candidate
		status int
		served string
	}{
		{"the failover serves", []plan.Candidate{pooled, hosted}, 200, "b"},
		{"alone: the refusal answers", []plan.Candidate{pooled}, 503, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			provs, pools := poolProviders(plan.Retry{})
			picker := &scriptedPools{refuse: no}
			m := metrics.New()
			up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {testkit.JSON(200, `{}`)}})
			res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: tt.cands,
				providers: provs, pools: pools, picker: picker, metrics: m}.serve(t, up)
			if rec.Code != tt.status || res.Provider != tt.served || res.Endpoint != "" || rec.Header().Get(record.HeaderEndpoint) != "" {
				t.Fatalf("%d by %q (%q): %s", rec.Code, res.Provider, res.Endpoint, rec.Body)
			}
			if n := testkit.Counter(t, m.Registry(), "pistra_failover_skipped_total", map[string]string{"provider": "gpus", "reason": "pool_no_member"}); n != 1 {
				t.Errorf("skipped %v, want 1", n)
			}
			if !slices.Equal(picker.log, []string{"refuse 2"}) {
				t.Errorf("picks heard %q", picker.log)
			}
		})
	}
}

// TestPoolModelRewrite: the model the picker rewrites the request to is
// what the member is sent (the model value edited, nothing else), what
// the answer names, and what the claim is settled on.
func TestPoolModelRewrite(t *testing.T) {
	provs, pools := poolProviders(plan.Retry{})
	picker := &scriptedPools{picks: [][]string{{memberA}}, model: "llama-lora-7"}
	g := &settledModels{}
	up := testkit.NewUpstream(map[string][]testkit.Reply{memberA: {testkit.JSON(200, `{"usage":{"prompt_tokens":1,"completion_tokens":2}}`)}})
	body := `{"messages":[],"model":"public", "n":1}`
	res, rec := call{route: plan.RouteChatCompletions, body: body, cands: []plan.Candidate{pooled},
		providers: provs, pools: pools, picker: picker, gate: g}.serve(t, up)
	if got := up.Calls(memberA)[0].Body; got != `{"messages":[],"model":"llama-lora-7", "n":1}` {
		t.Errorf("member got %s", got)
	}
	if res.Served == nil || res.Served.Model != "llama-lora-7" || rec.Header().Get(record.HeaderModel) != "llama-lora-7" {
		t.Errorf("served %+v, Pistra-Model %q", res.Served, rec.Header().Get(record.HeaderModel))
	}
	if pooled.Model != "llama" {
		t.Errorf("the plan's candidate was changed: %+v", pooled)
	}
	if !slices.Equal(g.log, []string{"admit llama", "settle llama-lora-7 200"}) {
		t.Errorf("gate heard %q", g.log)
	}
}

// TestPoolRewriteThenRetry: a retry's new pick is told the client's body
// for the plan's model, not the rewrite the first pick made, and the retry
// is sent with the model the new pick names.
func TestPoolRewriteThenRetry(t *testing.T) {
	provs, pools := poolProviders(plan.Retry{Max: 1, BackoffMS: 1, On: []plan.FailureClass{plan.Failure5xx}})
	picker := &scriptedPools{picks: [][]string{{memberA}, {memberB}}, model: "llama-lora-7"}
	up := testkit.NewUpstream(map[string][]testkit.Reply{memberA: {testkit.JSON(503, `{}`)}, memberB: {testkit.JSON(200, `{}`)}})
	res, _ := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{pooled},
		providers: provs, pools: pools, picker: picker}.serve(t, up)
	if res.Endpoint != memberB {
		t.Fatalf("served on %q", res.Endpoint)
	}
	for i, q := range picker.reqs {
		if string(q.Body) != `{"model":"llama","messages":[]}` {
			t.Errorf("pick %d told %s", i+1, q.Body)
		}
	}
	for _, ep := range []string{memberA, memberB} {
		if got := up.Calls(ep)[0].Body; got != `{"model":"llama-lora-7","messages":[]}` {
			t.Errorf("%s got %s", ep, got)
		}
	}
}

// settledModels admits everything and records which model each claim was
// priced for and settled on.
type settledModels struct{ log []string }

func (g *settledModels) Admit(_ *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	g.log = append(g.log, "admit "+c.Model)
	return g, nil
}

func (g *settledModels) Release() { g.log = append(g.log, "release") }
func (g *settledModels) Settle(o *admission.Outcome) {
	g.log = append(g.log, fmt.Sprintf("settle %s %d", o.Model, o.Status))
}

// TestPoolPickDoneOnce: a pick is done exactly once however the request
// ends: failing over to a hosted provider (before it is sent), a panic in
// the relay, a client that left.
func TestPoolPickDoneOnce(t *testing.T) {
	t.Run("failover", func(t *testing.T) {
		provs, pools := poolProviders(plan.Retry{})
		picker := &scriptedPools{picks: [][]string{{memberA}}}
		up := testkit.NewUpstream(map[string][]testkit.Reply{memberA: {testkit.JSON(503, `{}`)}, "b.test": {testkit.JSON(200, `{}`)}})
		res, rec := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{pooled, hosted},
			providers: provs, pools: pools, picker: picker}.serve(t, up)
		if res.Provider != "b" || rec.Header().Get(record.HeaderEndpoint) != "" {
			t.Fatalf("served by %q (%q)", res.Provider, rec.Header().Get(record.HeaderEndpoint))
		}
		if !slices.Equal(picker.log, []string{"pick1 " + memberA, "done1"}) {
			t.Errorf("picks heard %q", picker.log)
		}
	})
	t.Run("panic", func(t *testing.T) {
		provs, pools := poolProviders(plan.Retry{})
		picker := &scriptedPools{picks: [][]string{{memberA}}}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic reached the caller")
				}
			}()
			call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{pooled},
				providers: provs, pools: pools, picker: picker,
				transport: panickyUpstream{contentType: "text/event-stream", first: "data: {}\n\n"}}.serve(t, nil)
		}()
		if !slices.Equal(picker.log, []string{"pick1 " + memberA, "served1 " + memberA + " 200", "done1"}) {
			t.Errorf("picks heard %q", picker.log)
		}
	})
	t.Run("client gone", func(t *testing.T) {
		provs, pools := poolProviders(plan.Retry{})
		picker := &scriptedPools{picks: [][]string{{memberA}}}
		up := testkit.NewUpstream(map[string][]testkit.Reply{memberA: {testkit.SSE("data: {}\n\n", "data: [DONE]\n\n")}})
		call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[],"stream":true}`, cands: []plan.Candidate{pooled},
			providers: provs, pools: pools, picker: picker, gone: true}.serve(t, up)
		if n := strings.Count(strings.Join(picker.log, " "), "done1"); n != 1 {
			t.Errorf("done %d times: %q", n, picker.log)
		}
	})
}

// TestPoolWithoutPools: a Proxy built without Pools passes a pooled
// candidate over (it cannot tell which member to dial), counted.
func TestPoolWithoutPools(t *testing.T) {
	provs, pools := poolProviders(plan.Retry{})
	m := metrics.New()
	up := testkit.NewUpstream(map[string][]testkit.Reply{"b.test": {testkit.JSON(200, `{}`)}})
	res, _ := call{route: plan.RouteChatCompletions, body: `{"model":"public","messages":[]}`, cands: []plan.Candidate{pooled, hosted},
		providers: provs, pools: pools, metrics: m}.serve(t, up)
	if res.Provider != "b" {
		t.Fatalf("served by %q", res.Provider)
	}
	if n := testkit.Counter(t, m.Registry(), "pistra_failover_skipped_total", map[string]string{"provider": "gpus", "reason": "unsupported_candidate"}); n != 1 {
		t.Errorf("skipped %v, want 1", n)
	}
}
