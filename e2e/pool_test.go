package e2e

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/dnstest"
	"github.com/pistra/pistra/internal/testkit/fakepicker"
)

// TestPoolProcess runs pistrad with pools on loopback: members on
// 127.0.0.2-.5 named by a real DNS server whose answers change, and a
// real ext_proc picker scripted request by request; the OpenAI SDK is the
// client throughout.
func TestPoolProcess(t *testing.T) {
	bin := buildPistrad(t)
	t.Run("dns member set", func(t *testing.T) { testPoolDNS(t, bin) })
	t.Run("picker", func(t *testing.T) { testPoolPicker(t, bin) })
}

// testPoolDNS: round robin over what DNS answers; a member removed is not
// dialled once the (max-clamped) TTL passed, one added is; a failed
// resolution keeps the last set; the subset's profile stays on it.
func testPoolDNS(t *testing.T, bin string) {
	m := startMembers(t, 4)
	dnsSrv := dnstest.Start(t)
	dnsSrv.Set(t, poolName, time.Hour, ips(0, 1)...)
	dnsSrv.Set(t, subsetName, time.Hour, ips(1)...)
	d := poolDaemon(t, bin, poolPlan(t, poolPolicy(testkit.Pool{DNS: poolName + ":" + m.port})), dnsSrv, 300*time.Millisecond)

	sent := 0 // requests, each one pick
	serve := func(key string) string { sent++; return d.mustServe(t, key, "llama").endpoint }
	seen := map[string]int{}
	for range 4 {
		seen[serve(keyDefault)]++
	}
	if seen[m.addr(0)] != 2 || seen[m.addr(1)] != 2 {
		t.Fatalf("round robin over two members: %v", seen)
	}
	if c0, c1 := m.servers[0].Calls(), m.servers[1].Calls(); c0 != 2 || c1 != 2 {
		t.Fatalf("member calls %d %d", c0, c1)
	}
	for range 3 {
		if got := serve(keyBatch); got != m.addr(1) {
			t.Fatalf("subset profile served by %s", got)
		}
	}

	// .2 leaves and .4 joins; the TTL of an hour is cut to 300 ms.
	dnsSrv.Set(t, poolName, time.Hour, ips(1, 2)...)
	waitFor(t, "the added member serves", func() bool { return serve(keyDefault) == m.addr(2) })
	before := m.servers[0].Calls()
	seen = map[string]int{}
	for range 6 {
		seen[serve(keyDefault)]++
	}
	if m.servers[0].Calls() != before || seen[m.addr(0)] != 0 || seen[m.addr(1)] != 3 || seen[m.addr(2)] != 3 {
		t.Fatalf("after the change: %v, removed member called %d more", seen, m.servers[0].Calls()-before)
	}

	// DNS fails: the last good set serves on, and the log says so.
	dnsSrv.Fail(poolName, dns.RcodeServerFailure)
	waitFor(t, "the failure logged", func() bool {
		return strings.Contains(d.logs.String(), "pool member set not resolved; the last good set is kept")
	})
	waitFor(t, "the members' age past a TTL", func() bool {
		age, _ := strconv.ParseFloat(d.sample(t, `pistra_pool_members_age_seconds{provider="gpus",subset=""}`), 64)
		return age > 0.6
	})
	if v := d.sample(t, `pistra_pool_members{provider="gpus",subset=""}`); v != "2" {
		t.Errorf("pistra_pool_members %s after a failed resolution, want the last set's 2", v)
	}
	seen = map[string]int{}
	for range 4 {
		seen[serve(keyDefault)]++
	}
	if seen[m.addr(1)] != 2 || seen[m.addr(2)] != 2 {
		t.Fatalf("after a failed resolution: %v", seen)
	}
	if v := d.picks(t, "gpus", "round_robin"); v != strconv.Itoa(sent) {
		t.Errorf(`pistra_pool_picks_total{outcome="round_robin"} = %s, want %d`, v, sent)
	}
}

// pickerMembers: .2-.4 listen; .6 is in the member set with nothing
// behind it (down); .5 listens but is outside the set.
func pickerMembers(t *testing.T) (*members, *dnstest.Server) {
	m := startMembers(t, 4)
	dnsSrv := dnstest.Start(t)
	dnsSrv.Set(t, poolName, time.Hour, append(ips(0, 1, 2), "127.0.0.6")...)
	dnsSrv.Set(t, subsetName, time.Hour, ips(0)...)
	return m, dnsSrv
}

func testPoolPicker(t *testing.T, bin string) {
	m, dnsSrv := pickerMembers(t)
	picker := fakepicker.Start(t, fakepicker.Options{})
	pl := testkit.Pool{DNS: poolName + ":" + m.port, Picker: picker.Addr(), PickerPlaintext: true, PickerTimeout: "400ms"}
	d := poolDaemon(t, bin, poolPlan(t, poolPolicy(pl)), dnsSrv, time.Minute)
	down := "127.0.0.6:" + m.port

	t.Run("pick a member", func(t *testing.T) {
		picker.SetScript(func(fakepicker.Request) fakepicker.Reply { return fakepicker.Pick(m.addr(1)) })
		before := m.servers[1].Calls()
		if s := d.mustServe(t, keyDefault, "llama"); s.endpoint != m.addr(1) || m.servers[1].Calls() != before+1 {
			t.Fatalf("served by %s", s.endpoint)
		}
	})
	t.Run("pick outside the set", func(t *testing.T) {
		picker.SetScript(func(fakepicker.Request) fakepicker.Reply { return fakepicker.Pick(m.addr(3)) })
		s := d.mustServe(t, keyDefault, "llama")
		if s.endpoint == m.addr(3) || m.servers[3].Calls() != 0 {
			t.Fatalf("the outside address was dialled (%s)", s.endpoint)
		}
		if v := d.picks(t, "gpus", "refused"); v != "1" {
			t.Errorf("refused picks %s", v)
		}
		waitFor(t, "a WARN naming the address and the picker", func() bool {
			return slices.ContainsFunc(strings.Split(d.logs.String(), "\n"), func(l string) bool {
				return strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "pool pick refused") &&
					strings.Contains(l, m.addr(3)) && strings.Contains(l, picker.Addr())
			})
		})
	})
	t.Run("comma list, first down", func(t *testing.T) {
		picker.SetScript(func(fakepicker.Request) fakepicker.Reply { return fakepicker.Pick(down, m.addr(2)) })
		if s := d.mustServe(t, keyDefault, "llama"); s.endpoint != m.addr(2) {
			t.Fatalf("served by %s", s.endpoint)
		}
	})
	t.Run("rewrite the model", func(t *testing.T) {
		picker.SetScript(func(fakepicker.Request) fakepicker.Reply {
			r := fakepicker.Pick(m.addr(0))
			r.Model = "llama-70b"
			return r
		})
		s := d.mustServe(t, keyDefault, "llama")
		reqs := m.servers[0].Requests()
		if s.model != "llama-70b" || len(reqs) == 0 || reqs[len(reqs)-1].Model != "llama-70b" {
			t.Fatalf("Pistra-Model %q, upstream saw %+v", s.model, reqs)
		}
	})
	t.Run("shed", func(t *testing.T) {
		picker.SetScript(func(fakepicker.Request) fakepicker.Reply { return fakepicker.Immediate(429, "busy") })
		wantOpenAIError(t, d.chat(t, keyDefault, "llama").err, 429, "picker_shed")
		if v := d.picks(t, "gpus", "shed"); v != "1" {
			t.Errorf("shed picks %s", v)
		}
	})
	t.Run("subset hint", func(t *testing.T) {
		// The picker names a member outside the subset: refused, the
		// subset's own member serves, and the hint named only it.
		picker.SetScript(func(fakepicker.Request) fakepicker.Reply { return fakepicker.Pick(m.addr(1)) })
		n := len(picker.Requests())
		if s := d.mustServe(t, keyBatch, "llama"); s.endpoint != m.addr(0) {
			t.Fatalf("subset profile served by %s", s.endpoint)
		}
		reqs := picker.WaitEnded(t, n+1)
		if got := reqs[n].Subset; !slices.Equal(got, []string{m.addr(0)}) {
			t.Errorf("subset hint %v", got)
		}
	})
	t.Run("hang", func(t *testing.T) {
		picker.SetScript(func(fakepicker.Request) fakepicker.Reply { return fakepicker.Reply{Hang: true} })
		start := time.Now()
		wantOpenAIError(t, d.chat(t, keyDefault, "llama").err, 503, "picker_unavailable")
		if took := time.Since(start); took < 400*time.Millisecond || took > 3*time.Second {
			t.Errorf("fail closed after %s, want about picker_timeout", took)
		}
		d.mustServe(t, keyDefault, "llama-open")
		if v := d.picks(t, "gpus-open", "fallback"); v != "1" {
			t.Errorf("fallback picks %s", v)
		}
	})
	t.Run("down", func(t *testing.T) {
		picker.Stop()
		wantOpenAIError(t, d.chat(t, keyDefault, "llama").err, 503, "picker_unavailable")
		d.mustServe(t, keyDefault, "llama-open")
		if v := d.picks(t, "gpus", "picker_error"); v != "2" {
			t.Errorf("picker_error picks %s", v)
		}
	})
}
