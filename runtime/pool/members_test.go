package pool_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
)

// TestMembersFollowDNS: the set is what the name resolves to when Load
// returns, and follows DNS as it changes: a member removed is not picked
// once its TTL has passed, one added is.
func TestMembersFollowDNS(t *testing.T) {
	f := newFixture(t)
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2", "127.0.0.3")
	g := graph(plan.Pool{Name: "vllm", DNS: "vllm.test:8000"})
	f.set.Load(g)
	if st := f.status(t, "vllm"); !slices.Equal(st.Members, []string{"127.0.0.2:8000", "127.0.0.3:8000"}) || st.LastError != "" {
		t.Fatalf("after Load: members %v (error %q), want both", st.Members, st.LastError)
	}

	f.dns.Set(t, "vllm.test", 0, "127.0.0.3", "127.0.0.4")
	eventually(t, "the new member set", f.membersAre(t, "vllm", "127.0.0.3:8000", "127.0.0.4:8000"))
	seen := map[string]int{}
	for range 20 {
		seen[f.pick(t, g, &pool.Request{}).Endpoints()[0]]++
	}
	if seen["127.0.0.2:8000"] != 0 || seen["127.0.0.3:8000"] != 10 || seen["127.0.0.4:8000"] != 10 {
		t.Errorf("picks after the change = %v, want .3 and .4 ten times each, .2 never", seen)
	}
	if got := f.logLines(`"pool members changed"`, `"added":["127.0.0.4:8000"]`, `"removed":["127.0.0.2:8000"]`); len(got) != 1 {
		t.Errorf("log lines of the change: %q", got)
	}
	if got := testkit.Gauge(t, f.metrics.Registry(), "pistra_pool_members", map[string]string{"provider": "vllm", "subset": ""}); got != 2 {
		t.Errorf("pistra_pool_members = %v, want 2", got)
	}
}

// TestResolutionFailureKeepsLastSet: while DNS fails the last good set
// stays in use; its age grows, in the gauge and the status, and a WARN
// line says how old it is; the next answer replaces it.
func TestResolutionFailureKeepsLastSet(t *testing.T) {
	f := newFixture(t)
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2", "127.0.0.3")
	g := graph(plan.Pool{Name: "vllm", DNS: "vllm.test:8000"})
	f.set.Load(g)

	f.dns.Fail("vllm.test", dns.RcodeServerFailure)
	eventually(t, "a failed resolution", func() bool { return f.status(t, "vllm").LastError != "" })
	age := func() float64 {
		return testkit.Gauge(t, f.metrics.Registry(), "pistra_pool_members_age_seconds", map[string]string{"provider": "vllm", "subset": ""})
	}
	first := age()
	eventually(t, "the age gauge to grow", func() bool { return age() > first && age() >= 0.1 })
	st := f.status(t, "vllm")
	if !slices.Equal(st.Members, []string{"127.0.0.2:8000", "127.0.0.3:8000"}) || st.ResolvedAt == nil || st.AgeSeconds < 0.1 {
		t.Errorf("status while DNS fails: %+v, want the last set, resolved over 100ms ago", st.MemberSet)
	}
	if got := testkit.Gauge(t, f.metrics.Registry(), "pistra_pool_members", map[string]string{"provider": "vllm", "subset": ""}); got != 2 {
		t.Errorf("pistra_pool_members while DNS fails = %v, want 2", got)
	}
	if len(f.logLines(`"level":"WARN"`, `"pool member set not resolved; the last good set is kept"`, `"dns":"vllm.test:8000"`, `"age":"`, "SERVFAIL")) == 0 {
		t.Errorf("no WARN line of the failure with its age:\n%s", f.log)
	}
	seen := map[string]bool{}
	for range 4 {
		seen[f.pick(t, g, &pool.Request{}).Endpoints()[0]] = true
	}
	if len(seen) != 2 {
		t.Errorf("picks while DNS fails = %v, want both members of the last set", seen)
	}

	f.dns.Set(t, "vllm.test", 0, "127.0.0.4")
	eventually(t, "the set after DNS answers again", f.membersAre(t, "vllm", "127.0.0.4:8000"))
	if st := f.status(t, "vllm"); st.LastError != "" || st.AgeSeconds > 1 {
		t.Errorf("after DNS answers again: error %q, age %vs", st.LastError, st.AgeSeconds)
	}
}

// TestTTLClamped: the records' TTL sets when a name is resolved again,
// within the bounds: a long TTL is cut to the maximum (and DNS is asked
// again within it), a zero TTL raised to the minimum.
func TestTTLClamped(t *testing.T) {
	f := newFixture(t, func(o *pool.Options) { o.MinTTL, o.MaxTTL = minTTL, 1500*time.Millisecond })
	f.dns.Set(t, "long.test", time.Hour, "127.0.0.2")
	f.dns.Set(t, "zero.test", 0, "127.0.0.3")
	f.dns.Set(t, "mid.test", time.Second, "127.0.0.4")
	g := graph(plan.Pool{Name: "long", DNS: "long.test:8000"}, plan.Pool{Name: "zero", DNS: "zero.test:8000"},
		plan.Pool{Name: "mid", DNS: "mid.test:8000"})
	f.set.Load(g)
	for provider, want := range map[string]string{"long": "1.5s", "zero": "50ms", "mid": "1s"} {
		if got := f.status(t, provider).NextResolve; got != want {
			t.Errorf("%s: next resolution in %s, want %s", provider, got, want)
		}
	}
	// An hour's TTL is still re-read within the maximum (A and AAAA).
	asked := f.dns.Queries("long.test")
	eventually(t, "long.test re-resolved", func() bool { return f.dns.Queries("long.test") >= asked+2 })
}

// TestEmptyAnswerIsNoMember: NXDOMAIN and an answer without addresses are
// DNS saying the pool has no members, not a failure: the set empties, and
// a pick is refused pool_no_member (503) and counted no_member; Refused
// (what preflight asks) says the same, counting nothing.
func TestEmptyAnswerIsNoMember(t *testing.T) {
	f := newFixture(t)
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2")
	g := graph(plan.Pool{Name: "vllm", DNS: "vllm.test:8000"})
	f.set.Load(g)
	for _, empty := range []func(){
		func() { f.dns.Remove("vllm.test") },
		func() { f.dns.Set(t, "vllm.test", 0) },
	} {
		empty()
		eventually(t, "the empty set", f.membersAre(t, "vllm"))
		if st := f.status(t, "vllm"); st.LastError != "" {
			t.Errorf("an empty answer is read as a failure: %q", st.LastError)
		}
		no := f.refused(t, g, &pool.Request{})
		if no.Reason != pool.ReasonNoMember || no.Error.Status != http.StatusServiceUnavailable || no.Error.Final {
			t.Errorf("refusal = %s %d final=%v, want pool_no_member 503, not final", no.Reason, no.Error.Status, no.Error.Final)
		}
		if pre := f.set.Refused(g, &plan.Candidate{Provider: 0}); pre == nil || pre.Reason != pool.ReasonNoMember {
			t.Errorf("what preflight is told of the empty set: %v", pre)
		}
		f.dns.Set(t, "vllm.test", 0, "127.0.0.2")
		eventually(t, "the member back", f.membersAre(t, "vllm", "127.0.0.2:8000"))
		if pre := f.set.Refused(g, &plan.Candidate{Provider: 0}); pre != nil {
			t.Errorf("what preflight is told of a set with a member: %v", pre)
		}
	}
	if pre := f.set.Refused(g, &plan.Candidate{Provider: 0, PoolSubset: "h100"}); pre == nil || pre.Reason != pool.ReasonNoMember {
		t.Errorf("what preflight is told of a subset the pool lacks: %v", pre)
	}
	plain := &plan.Graph{Providers: []plan.Provider{{Name: "oa", Pool: -1}}}
	if pre := f.set.Refused(plain, &plan.Candidate{Provider: 0}); pre != nil {
		t.Errorf("a provider without a pool: %v", pre)
	}
	if got := f.picks(t, "vllm", pool.OutcomeNoMember); got != 2 {
		t.Errorf("no_member picks = %v, want 2", got)
	}
}

// TestAddressLiteralIsAFixedSet: a pool whose dns is an address is that
// one member, and DNS is never asked.
func TestAddressLiteralIsAFixedSet(t *testing.T) {
	f := newFixture(t)
	g := graph(plan.Pool{Name: "one", DNS: "127.0.0.2:9000"}, plan.Pool{Name: "six", DNS: "[::1]:9000"})
	f.set.Load(g)
	if got := f.pick(t, g, &pool.Request{}).Endpoints(); !slices.Equal(got, []string{"127.0.0.2:9000"}) {
		t.Errorf("pick = %v", got)
	}
	if st := f.status(t, "six"); !slices.Equal(st.Members, []string{"[::1]:9000"}) || st.ResolvedAt != nil || st.AgeSeconds != 0 {
		t.Errorf("an IPv6 literal's status: %+v", st.MemberSet)
	}
}

// TestReloadKeepsAndStopsWatchers: a reload keeps resolving the names it
// still uses and stops the others at once; the gauges of a provider it
// removed are withdrawn.
func TestReloadKeepsAndStopsWatchers(t *testing.T) {
	f := newFixture(t)
	f.dns.Set(t, "a.test", 0, "127.0.0.2")
	f.dns.Set(t, "b.test", 0, "127.0.0.3")
	f.set.Load(graph(plan.Pool{Name: "a", DNS: "a.test:8000"}, plan.Pool{Name: "b", DNS: "b.test:8000"}))
	g2 := graph(plan.Pool{Name: "a", DNS: "a.test:8000"})
	f.set.Load(g2)
	// A query sent just before the stop may still reach the server: b's
	// count is read once a.test has been resolved again since.
	resolvedAgain := func() {
		asked := f.dns.Queries("a.test")
		eventually(t, "a.test resolved again", func() bool { return f.dns.Queries("a.test") >= asked+2 })
	}
	resolvedAgain()
	stopped := f.dns.Queries("b.test")
	resolvedAgain()
	resolvedAgain()
	if got := f.dns.Queries("b.test"); got != stopped {
		t.Errorf("b.test asked %d times after the reload dropped it", got-stopped)
	}
	if got := testkit.Gauge(t, f.metrics.Registry(), "pistra_pool_members", map[string]string{"provider": "b"}); got != 0 {
		t.Errorf("the removed provider's gauge is still %v", got)
	}
	if got := f.set.Status(time.Now()); len(got) != 1 || got[0].Provider != "a" {
		t.Errorf("status after the reload: %+v", got)
	}
}

// TestSilentDNSKeepsLastSet: a DNS server that stops answering is a
// failure like any other (the last set kept), and does not hold up Close.
func TestSilentDNSKeepsLastSet(t *testing.T) {
	f := newFixture(t)
	f.dns.Set(t, "vllm.test", 0, "127.0.0.2")
	g := graph(plan.Pool{Name: "vllm", DNS: "vllm.test:8000"})
	f.set.Load(g)
	f.dns.Silence("vllm.test")
	eventually(t, "a resolution timed out", func() bool { return f.status(t, "vllm").LastError != "" })
	if st := f.status(t, "vllm"); !slices.Equal(st.Members, []string{"127.0.0.2:8000"}) {
		t.Errorf("members after a timeout: %v", st.Members)
	}
	asked := f.dns.Queries("vllm.test")
	eventually(t, "the next query, unanswered", func() bool { return f.dns.Queries("vllm.test") > asked })
	start := time.Now()
	f.set.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close waited %v on a query nobody answers", d)
	}
}

// TestLargeSetOverTCP: a set too large for a UDP answer is read whole,
// asked again over TCP.
func TestLargeSetOverTCP(t *testing.T) {
	f := newFixture(t)
	var addrs []string
	for i := range 400 {
		addrs = append(addrs, fmt.Sprintf("10.0.%d.%d", i/250, i%250+1))
	}
	f.dns.Set(t, "big.test", 0, addrs...)
	f.set.Load(graph(plan.Pool{Name: "big", DNS: "big.test:8000"}))
	if got := len(f.status(t, "big").Members); got != 400 {
		t.Errorf("%d members read, want 400", got)
	}
}
