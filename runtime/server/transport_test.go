package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/record"
)

// These tests run the server's own upstream transport, both clients of it,
// against upstreams on loopback that count their open connections.

// guard bounds every wait here; a healthy run takes milliseconds.
const guard = 30 * time.Second

// countedUpstream is an upstream whose open connections are counted.
type countedUpstream struct {
	*httptest.Server
	open, dialled atomic.Int32
	changed       chan struct{} // poked on every connection closed
}

func newCountedUpstream(t *testing.T, h http.HandlerFunc) *countedUpstream {
	u := &countedUpstream{changed: make(chan struct{}, 1)}
	u.Server = httptest.NewUnstartedServer(h)
	u.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			u.open.Add(1)
			u.dialled.Add(1)
		case http.StateClosed, http.StateHijacked:
			u.open.Add(-1)
			select {
			case u.changed <- struct{}{}:
			default:
			}
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// waitOpen waits until at most n connections to u are open.
func (u *countedUpstream) waitOpen(t *testing.T, n int32) {
	t.Helper()
	timeout := time.After(guard)
	for u.open.Load() > n {
		select {
		case <-u.changed:
		case <-timeout:
			t.Fatalf("%s has %d connections open, want %d", u.URL, u.open.Load(), n)
		}
	}
}

func answerOK(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

// pairGraph has two OpenAI providers: "a" at aURL, which fails over to
// "b" at bURL on a connect-class failure, serving model "gpt", and "b"
// alone serving "other".
func pairGraph(aURL, bURL string) *plan.Graph {
	b := testkit.NewGraph("sha256:pair-" + aURL + bURL)
	native := []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative,
		Routes: []plan.Route{plan.RouteChatCompletions}, Origin: "native", Preserves: plan.AllCaps}}
	pa := b.Provider(plan.Provider{Name: "a", BaseURL: aURL + "/v1", Pool: -1, Channels: native,
		Failover: plan.Failover{To: []int{1}, On: []plan.FailureClass{plan.FailureConnect}}})
	pb := b.Provider(plan.Provider{Name: "b", BaseURL: bURL + "/v1", Pool: -1, Channels: native})
	cand := func(p int, primary bool) plan.Candidate {
		return plan.Candidate{Provider: p, Model: "m", Tier: plan.TierNative, Preserves: plan.AllCaps, Origin: "native", Primary: primary}
	}
	gpt := b.Plan(plan.Plan{NativeOnly: true, Listed: true}, []plan.Candidate{cand(pa, true), cand(pb, false)}, nil)
	other := b.Plan(plan.Plan{NativeOnly: true, Listed: true}, []plan.Candidate{cand(pb, true)}, nil)
	table := b.Table(plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt", Plan: gpt},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "other", Plan: other})
	b.Key("default", "k-default", b.Profile(plan.Profile{Name: "default", Table: table}))
	return b.Build()
}

// transportServer is a server on graph *serving (read at every reload)
// with its own upstream transport, tuned by o.
func transportServer(t *testing.T, serving **plan.Graph, o proxy.TransportOptions) *Server {
	opts := testOptions(nil, nil)
	opts.Load = func() (*plan.Graph, string, error) { return *serving, "test", nil }
	opts.Transport = o
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.opts.Upstream.(*proxy.Transport).CloseIdleConnections)
	return s
}

// chat asks for model and returns the provider that served it.
func chat(t *testing.T, s *Server, model string) string {
	t.Helper()
	rec := s.do(publicRequest{"POST", "/v1/chat/completions", `{"model":"` + model + `","messages":[]}`,
		map[string]string{"Authorization": "Bearer k-default", "Content-Type": "application/json"}})
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", model, rec.Code, rec.Body)
	}
	return rec.Header().Get(record.HeaderProvider)
}

// forEachClient runs f with the lean client and with net/http's Transport.
func forEachClient(t *testing.T, f func(t *testing.T, o proxy.TransportOptions)) {
	for _, stdlib := range []bool{false, true} {
		t.Run(fmt.Sprintf("stdlib=%v", stdlib), func(t *testing.T) {
			o := proxy.DefaultTransportOptions
			o.StdlibOnly = stdlib
			f(t, o)
		})
	}
}

// TestOversizedUpstreamHeadFailsOver: an upstream whose response head
// is 2 MiB fails its attempt like a connection failure, so the request
// fails over; its connection is closed, not pooled.
func TestOversizedUpstreamHeadFailsOver(t *testing.T) {
	forEachClient(t, func(t *testing.T, o proxy.TransportOptions) {
		var calls atomic.Int32
		huge := newCountedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("X-Filler", strings.Repeat("a", 2<<20))
			answerOK(w, r)
		})
		good := newCountedUpstream(t, answerOK)
		g := pairGraph(huge.URL, good.URL)
		s := transportServer(t, &g, o)
		for i := range 2 {
			if got := chat(t, s, "gpt"); got != "b" {
				t.Fatalf("request %d served by %q, want the failover to b", i, got)
			}
			huge.waitOpen(t, 0)
		}
		if n, d := calls.Load(), huge.dialled.Load(); n != 2 || d != 2 {
			t.Fatalf("the oversized upstream had %d calls on %d connections, want 2 on 2", n, d)
		}
	})
}

// TestReloadClosesIdleConnectionsToDroppedHosts: a reload that drops a
// host closes the idle connections to it at once, well within the idle
// timeout. The lean client keeps those to the hosts still served.
func TestReloadClosesIdleConnectionsToDroppedHosts(t *testing.T) {
	forEachClient(t, func(t *testing.T, o proxy.TransportOptions) {
		o.IdleConnTimeout = 10 * time.Minute // so only the reload can close them
		dropped, kept := newCountedUpstream(t, answerOK), newCountedUpstream(t, answerOK)
		g := pairGraph(dropped.URL, kept.URL)
		s := transportServer(t, &g, o)
		if chat(t, s, "gpt") != "a" || chat(t, s, "other") != "b" {
			t.Fatal("the providers did not serve their models")
		}
		if dropped.open.Load() != 1 || kept.open.Load() != 1 {
			t.Fatalf("open connections %d and %d, want one idle each", dropped.open.Load(), kept.open.Load())
		}
		g = pairGraph(kept.URL, kept.URL)
		if _, err := s.Reload(); err != nil {
			t.Fatal(err)
		}
		dropped.waitOpen(t, 0)
		if chat(t, s, "gpt") != "a" {
			t.Fatal("a no longer serves gpt")
		}
		if !o.StdlibOnly && kept.dialled.Load() != 1 {
			t.Fatalf("the kept host was dialled %d times, want its idle connection reused", kept.dialled.Load())
		}
	})
}

// TestDroppedHostBusyAtReloadClosesWhenIdle: a connection to a dropped
// host still carrying a request at the reload is closed once it has sat
// idle for the idle timeout.
func TestDroppedHostBusyAtReloadClosesWhenIdle(t *testing.T) {
	forEachClient(t, func(t *testing.T, o proxy.TransportOptions) {
		o.IdleConnTimeout = 200 * time.Millisecond
		arrived, release := make(chan struct{}), make(chan struct{})
		dropped := newCountedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-release
			answerOK(w, r)
		})
		kept := newCountedUpstream(t, answerOK)
		g := pairGraph(dropped.URL, kept.URL)
		s := transportServer(t, &g, o)
		done := make(chan string)
		go func() {
			rec := s.do(publicRequest{"POST", "/v1/chat/completions", `{"model":"gpt","messages":[]}`,
				map[string]string{"Authorization": "Bearer k-default", "Content-Type": "application/json"}})
			done <- fmt.Sprint(rec.Code, " ", rec.Header().Get(record.HeaderProvider))
		}()
		waitFor(t, arrived)
		g = pairGraph(kept.URL, kept.URL)
		if _, err := s.Reload(); err != nil {
			t.Fatal(err)
		}
		// The connection goes idle after released; a close seen before
		// released+IdleConnTimeout was not the idle timeout's. net/http's
		// Transport closes it the moment it goes idle (CloseIdleConnections
		// marks newly idle connections for closing), so only h1 is timed.
		released := time.Now()
		close(release)
		if got := <-done; got != "200 a" {
			t.Fatalf("the request in flight: %q, want 200 from a", got)
		}
		if open := dropped.open.Load(); open == 0 && !o.StdlibOnly && time.Since(released) < o.IdleConnTimeout {
			t.Fatal("the connection to the dropped host closed before it sat idle for the idle timeout")
		}
		dropped.waitOpen(t, 0) // with no request to wake the pool
	})
}

func waitFor(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("the upstream never got the request")
	}
}
