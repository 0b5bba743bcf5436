package pool_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
)

// threeMembers is a fixture whose pool "vllm" has three members, and its
// graph built from pool p (DNS filled in).
func threeMembers(t *testing.T, p plan.Pool, edit ...func(*pool.Options)) (*fixture, *plan.Graph) {
	f := newFixture(t, edit...)
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	f.dns.Set(t, "h100.test", 0, "127.0.0.4", "127.0.0.5")
	p.Name, p.DNS = "vllm", "vllm.test:8000"
	p.Subsets = []plan.Subset{{Name: "h100", DNS: "h100.test:8000"}}
	g := graph(p)
	f.set.Load(g)
	return f, g
}

var members = []string{"127.0.0.2:8000", "127.0.0.3:8000", "127.0.0.4:8000"}

// TestRoundRobinSpreads: without a picker the members take requests in
// turn, evenly, each pick counted round_robin.
func TestRoundRobinSpreads(t *testing.T) {
	f, g := threeMembers(t, plan.Pool{})
	seen := map[string]int{}
	var order []string
	for range 30 {
		pk := f.pick(t, g, &pool.Request{})
		if pk.Outcome() != pool.OutcomeRoundRobin || len(pk.Endpoints()) != 1 || pk.Model() != "" {
			t.Fatalf("pick = %+v", pk)
		}
		seen[pk.Endpoints()[0]]++
		order = append(order, pk.Endpoints()[0])
		pk.Served(pk.Endpoints()[0], 200) // nothing to tell without a picker
		pk.Done()
	}
	for _, m := range members {
		if seen[m] != 10 {
			t.Errorf("%s picked %d times of 30, want 10 (%v)", m, seen[m], seen)
		}
	}
	for i := 3; i < len(order); i++ {
		if order[i] != order[i-3] {
			t.Fatalf("not in turn: %v", order)
		}
	}
	if got := f.picks(t, "vllm", pool.OutcomeRoundRobin); got != 30 {
		t.Errorf("round_robin picks = %v, want 30", got)
	}
}

// TestExcludeSteersRetries: a retry goes to a member the request has not
// tried while one is left; with every member tried it still gets one.
func TestExcludeSteersRetries(t *testing.T) {
	f, g := threeMembers(t, plan.Pool{})
	for range 6 {
		first := f.pick(t, g, &pool.Request{}).Endpoints()[0]
		second := f.pick(t, g, &pool.Request{Exclude: []string{first}}).Endpoints()[0]
		third := f.pick(t, g, &pool.Request{Exclude: []string{first, second}}).Endpoints()[0]
		if second == first || third == first || third == second {
			t.Fatalf("retries went to %s, %s, %s: a member tried again while another was left", first, second, third)
		}
	}
	if got := f.pick(t, g, &pool.Request{Exclude: members}).Endpoints()[0]; !slices.Contains(members, got) {
		t.Errorf("with every member tried: %s", got)
	}
}

// TestSubsetPicks: a request bound to a subset is sent only to the
// subset's members, with and without a picker (which is told the subset);
// a subset the pool lacks is no member.
func TestSubsetPicks(t *testing.T) {
	subset := []string{"127.0.0.4:8000", "127.0.0.5:8000"}
	f, g := threeMembers(t, plan.Pool{})
	for range 6 {
		if got := f.pick(t, g, &pool.Request{Subset: "h100"}).Endpoints()[0]; !slices.Contains(subset, got) {
			t.Fatalf("subset pick %s is outside the subset", got)
		}
	}
	if st := f.status(t, "vllm"); len(st.Subsets) != 1 || !slices.Equal(st.Subsets[0].Members, subset) {
		t.Errorf("subset status: %+v", st.Subsets)
	}
	if got := testkit.Gauge(t, f.metrics.Registry(), "pistra_pool_members", map[string]string{"provider": "vllm", "subset": "h100"}); got != 2 {
		t.Errorf("the subset's pistra_pool_members = %v, want 2", got)
	}
	if no := f.refused(t, g, &pool.Request{Subset: "a10"}); no.Reason != pool.ReasonNoMember {
		t.Errorf("an unknown subset: %s", no.Reason)
	}

	fp := &fakePicker{script: picks("127.0.0.5:8000")}
	var dials int
	f, g = threeMembers(t, plan.Pool{Picker: "picker.test:9002"}, withPicker(fp, &dials))
	if pk := f.pick(t, g, &pool.Request{Subset: "h100"}); !slices.Equal(pk.Endpoints(), []string{"127.0.0.5:8000"}) {
		t.Errorf("picker's subset pick = %v", pk.Endpoints())
	}
	if q := fp.lastQuery(t); !slices.Equal(q.Subset, subset) {
		t.Errorf("the picker was told the subset %v, want %v", q.Subset, subset)
	}
	// A pool member outside the subset is outside the set the request may use.
	fp.script = picks("127.0.0.2:8000")
	if pk := f.pick(t, g, &pool.Request{Subset: "h100"}); pk.Outcome() != pool.OutcomeRefused || !slices.Contains(subset, pk.Endpoints()[0]) {
		t.Errorf("a pick outside the subset: %+v", pk)
	}
	if q := f.pick(t, g, &pool.Request{}); q.Outcome() != pool.OutcomePicked {
		t.Errorf("without a subset the same pick is the pool's: %+v", q)
	}
	if q := fp.lastQuery(t); q.Subset != nil {
		t.Errorf("a request without a subset sent the subset hint %v", q.Subset)
	}
}

// TestPickerPick: the picker's endpoints, all members, are used in its
// order, those the request tried last; its stream hears which served and
// ends once; the picker sees the request id, the body, never the client's
// credentials.
func TestPickerPick(t *testing.T) {
	fp := &fakePicker{script: picks("127.0.0.3:8000", "127.0.0.2:8000")}
	var dials int
	f, g := threeMembers(t, plan.Pool{Picker: "picker.test:9002", PickerTimeoutMS: 750}, withPicker(fp, &dials))
	h := http.Header{"Authorization": {"Bearer sk-client"}, "X-Api-Key": {"sk-client"}, "Cookie": {"c=1"}, "User-Agent": {"sdk"}}
	body := []byte(`{"model":"llama","messages":[]}`)
	pk := f.pick(t, g, &pool.Request{Model: "llama", RequestID: "req-1", Header: h, Body: body})
	if pk.Outcome() != pool.OutcomePicked || !slices.Equal(pk.Endpoints(), []string{"127.0.0.3:8000", "127.0.0.2:8000"}) || pk.Model() != "" {
		t.Errorf("pick = %+v", pk)
	}
	q := fp.lastQuery(t)
	if q.Header.Get("Authorization") != "" || q.Header.Get("X-Api-Key") != "" || q.Header.Get("Cookie") != "" {
		t.Errorf("the picker was sent credentials: %v", q.Header)
	}
	if q.Header.Get("X-Request-Id") != "req-1" || q.Header.Get("User-Agent") != "sdk" || string(q.Body) != string(body) || q.Timeout.Milliseconds() != 750 {
		t.Errorf("query = %+v", q)
	}
	if h.Get("Authorization") == "" {
		t.Error("the client's own headers were edited")
	}
	pk.Served("127.0.0.3:8000", 200)
	pk.Done()
	pk.Done()
	pk.Served("127.0.0.3:8000", 200) // after Done: nothing
	if served, done := fp.lastStream(t).state(); !slices.Equal(served, []string{"127.0.0.3:8000 OK"}) || done != 1 {
		t.Errorf("stream told %v, done %d times", served, done)
	}
	retry := f.pick(t, g, &pool.Request{Exclude: []string{"127.0.0.3:8000"}})
	if !slices.Equal(retry.Endpoints(), []string{"127.0.0.2:8000", "127.0.0.3:8000"}) {
		t.Errorf("a retry's endpoints = %v, want the untried first", retry.Endpoints())
	}
	if got := f.picks(t, "vllm", pool.OutcomePicked); got != 2 {
		t.Errorf("picked = %v, want 2", got)
	}
	if dials != 1 {
		t.Errorf("dialled %d times", dials)
	}
}

// TestPickOutsideTheSetRefused: an endpoint the picker names outside the
// member set (or unreadable) refuses the pick, whatever else it named: a
// WARN line names the address and the picker, it is counted refused, the
// picker's exchange ends, and the request goes to the members in turn.
func TestPickOutsideTheSetRefused(t *testing.T) {
	fp := &fakePicker{}
	var dials int
	f, g := threeMembers(t, plan.Pool{Picker: "picker.test:9002"}, withPicker(fp, &dials))
	for i, named := range [][]string{{"10.9.9.9:8000"}, {"127.0.0.2:8000", "127.0.0.9:8000"}, {"127.0.0.2:9999"}, {"vllm-0:8000"}} {
		fp.script = picks(named...)
		pk := f.pick(t, g, &pool.Request{})
		if pk.Outcome() != pool.OutcomeRefused || len(pk.Endpoints()) != 1 || !slices.Contains(members, pk.Endpoints()[0]) {
			t.Errorf("%v: pick = %+v, want a member in turn", named, pk)
		}
		if _, done := fp.lastStream(t).state(); done != 1 {
			t.Errorf("%v: the refused pick's exchange was not ended", named)
		}
		bad := named[len(named)-1]
		if len(f.logLines(`"level":"WARN"`, `"pool pick refused`, `"picker":"picker.test:9002"`, fmt.Sprintf(`"address":[%q]`, bad))) != 1 {
			t.Errorf("%v: no WARN line naming %s and the picker:\n%s", named, bad, f.log)
		}
		if got := f.picks(t, "vllm", pool.OutcomeRefused); got != float64(i+1) {
			t.Errorf("refused = %v, want %d", got, i+1)
		}
	}
}

// TestPickCheckedAtThatMoment: the pick is checked against the set as it
// is when the picker answers, not as it was when it was asked.
func TestPickCheckedAtThatMoment(t *testing.T) {
	fp := &fakePicker{}
	var dials int
	f, g := threeMembers(t, plan.Pool{Picker: "picker.test:9002"}, withPicker(fp, &dials))
	fp.script = func(pool.Query) (*pool.Answer, error) {
		f.dns.Set(t, "vllm.test", 0, "127.0.0.3", "127.0.0.4")
		eventually(t, "the member removed", f.membersAre(t, "vllm", "127.0.0.3:8000", "127.0.0.4:8000"))
		return &pool.Answer{Endpoints: []string{"127.0.0.2:8000"}}, nil
	}
	if pk := f.pick(t, g, &pool.Request{}); pk.Outcome() != pool.OutcomeRefused || pk.Endpoints()[0] == "127.0.0.2:8000" {
		t.Errorf("a pick of a member removed meanwhile: %+v", pk)
	}
}

// TestPickerFailure: a picker that fails (an error, no endpoint named, no
// client at all) fails the candidate closed, picker_unavailable 503, by
// default, or sends the request to the members in turn when its pool
// fails open, counted fallback.
func TestPickerFailure(t *testing.T) {
	for _, fail := range []struct {
		name   string
		script func(pool.Query) (*pool.Answer, error)
	}{
		{"error", func(pool.Query) (*pool.Answer, error) { return nil, errors.New("rpc error: code = Unavailable") }},
		{"nothing named", picks()},
		{"immediate 500", func(pool.Query) (*pool.Answer, error) { return nil, &pool.Immediate{Status: 500} }},
	} {
		fp := &fakePicker{script: fail.script}
		var dials int
		f, g := threeMembers(t, plan.Pool{Picker: "picker.test:9002"}, withPicker(fp, &dials))
		no := f.refused(t, g, &pool.Request{})
		if no.Reason != pool.ReasonPickerUnavailable || no.Error.Status != http.StatusServiceUnavailable || no.Final {
			t.Errorf("%s, fail closed: %s %d final=%v", fail.name, no.Reason, no.Error.Status, no.Final)
		}
		if strings.Contains(no.Error.Message, "picker.test") {
			t.Errorf("%s: the client is told the picker's address: %s", fail.name, no.Error.Message)
		}
		if len(f.logLines(`"level":"WARN"`, `"pool picker failed"`, `"picker":"picker.test:9002"`)) != 1 {
			t.Errorf("%s: no WARN line of the failure:\n%s", fail.name, f.log)
		}
		if got := f.picks(t, "vllm", pool.OutcomePickerError); got != 1 {
			t.Errorf("%s: picker_error = %v", fail.name, got)
		}

		f, g = threeMembers(t, plan.Pool{Picker: "picker.test:9002", PickerFailure: plan.PickerFailOpen}, withPicker(fp, &dials))
		if pk := f.pick(t, g, &pool.Request{}); pk.Outcome() != pool.OutcomeFallback || !slices.Contains(members, pk.Endpoints()[0]) {
			t.Errorf("%s, fail open: %+v", fail.name, pk)
		}
		if got := f.picks(t, "vllm", pool.OutcomeFallback); got != 1 {
			t.Errorf("%s: fallback = %v", fail.name, got)
		}
	}
	f := newFixture(t, func(o *pool.Options) {
		o.Picker = func(*plan.Pool) (pool.Picker, error) { return nil, errors.New("no such CA file") }
	})
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2")
	g := graph(plan.Pool{Name: "vllm", DNS: "vllm.test:8000", Picker: "picker.test:9002"})
	f.set.Load(g)
	if no := f.refused(t, g, &pool.Request{}); no.Reason != pool.ReasonPickerUnavailable {
		t.Errorf("a picker that could not be dialled: %s", no.Reason)
	}
	if st := f.status(t, "vllm"); st.PickerError == "" || st.PickerFailure != plan.PickerFailClosed {
		t.Errorf("status of a picker that could not be dialled: %+v", st)
	}
}

// TestPickerShedsAndHasNone: the picker's 429 sheds the request
// (picker_shed, 429, counted shed) and its 503 is no member.
func TestPickerShedsAndHasNone(t *testing.T) {
	fp := &fakePicker{script: func(pool.Query) (*pool.Answer, error) {
		return nil, fmt.Errorf("ext_proc: %w", &pool.Immediate{Status: 429, Body: "request dropped"})
	}}
	var dials int
	f, g := threeMembers(t, plan.Pool{Picker: "picker.test:9002", PickerFailure: plan.PickerFailOpen}, withPicker(fp, &dials))
	no := f.refused(t, g, &pool.Request{})
	if no.Reason != pool.ReasonPickerShed || no.Error.Status != http.StatusTooManyRequests {
		t.Errorf("shed: %s %d", no.Reason, no.Error.Status)
	}
	fp.script = func(pool.Query) (*pool.Answer, error) { return nil, &pool.Immediate{Status: 503} }
	if no := f.refused(t, g, &pool.Request{}); no.Reason != pool.ReasonNoMember || no.Error.Status != http.StatusServiceUnavailable {
		t.Errorf("none ready: %s %d", no.Reason, no.Error.Status)
	}
	if f.picks(t, "vllm", pool.OutcomeShed) != 1 || f.picks(t, "vllm", pool.OutcomeNoMember) != 1 {
		t.Error("shed and no_member not counted once each")
	}
}

// TestPickerModelRewrite: the model the picker rewrote the request to is
// the pick's; a refused pick's rewrite is not.
func TestPickerModelRewrite(t *testing.T) {
	fp := &fakePicker{}
	var dials int
	f, g := threeMembers(t, plan.Pool{Picker: "picker.test:9002"}, withPicker(fp, &dials))
	for endpoint, want := range map[string]string{"127.0.0.2:8000": "llama-lora-a", "10.9.9.9:8000": ""} {
		fp.script = func(pool.Query) (*pool.Answer, error) {
			return &pool.Answer{Endpoints: []string{endpoint}, Model: "llama-lora-a"}, nil
		}
		if pk := f.pick(t, g, &pool.Request{Model: "llama"}); pk.Model() != want {
			t.Errorf("pick of %s: Model %q, want %q", endpoint, pk.Model(), want)
		}
	}
}

// TestPickerKeptAcrossReloads: a pool whose declaration a reload keeps
// keeps its picker client; a changed one is dialled anew and the old
// client closed by the reload after (the requests of the graph it served
// may still use it).
func TestPickerKeptAcrossReloads(t *testing.T) {
	var clients []*fakePicker
	f := newFixture(t, func(o *pool.Options) {
		o.Picker = func(*plan.Pool) (pool.Picker, error) {
			clients = append(clients, &fakePicker{script: picks("127.0.0.2:8000")})
			return clients[len(clients)-1], nil
		}
	})
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2")
	p := plan.Pool{Name: "vllm", DNS: "vllm.test:8000", Picker: "picker.test:9002"}
	f.set.Load(graph(p))
	f.set.Load(graph(p))
	if len(clients) != 1 {
		t.Fatalf("an unchanged pool dialled %d clients", len(clients))
	}
	p.Picker = "picker2.test:9002"
	g := graph(p)
	f.set.Load(g)
	if len(clients) != 2 || clients[0].closed {
		t.Fatalf("after a change: %d clients, the first closed=%v (too soon)", len(clients), clients[0].closed)
	}
	f.pick(t, g, &pool.Request{})
	if len(clients[1].queries) != 1 {
		t.Error("the new client was not asked")
	}
	f.set.Load(graph(plan.Pool{Name: "vllm", DNS: "vllm.test:8000"}))
	if !clients[0].closed || clients[1].closed {
		t.Errorf("closed: first %v, second %v; want the first closed now, the second at the next reload", clients[0].closed, clients[1].closed)
	}
	f.set.Load(graph(plan.Pool{Name: "vllm", DNS: "vllm.test:8000"}))
	if !clients[1].closed {
		t.Error("a picker the policy dropped was never closed")
	}
}

// TestPickUnderAnOlderGraph: a request served under the graph a reload
// replaced still finds its pool; one under a graph two reloads old finds
// its provider by name.
func TestPickUnderAnOlderGraph(t *testing.T) {
	f := newFixture(t)
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2")
	p := plan.Pool{Name: "vllm", DNS: "vllm.test:8000"}
	g1, g2, g3 := graph(p), graph(p), graph(p)
	for _, g := range []*plan.Graph{g1, g2, g3} {
		f.set.Load(g)
	}
	for _, g := range []*plan.Graph{g1, g2, g3} {
		f.pick(t, g, &pool.Request{})
	}
	if _, no := f.set.Pick(context.Background(), &plan.Graph{Providers: []plan.Provider{{Name: "other", Pool: 0}}}, 0, &pool.Request{}); no == nil || no.Reason != pool.ReasonNoMember {
		t.Errorf("a provider the set never loaded: %v", no)
	}
}
