package pool_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/dnstest"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
)

// Short bounds, so a test sees several resolutions in well under a second.
const (
	minTTL = 50 * time.Millisecond
	maxTTL = 200 * time.Millisecond
)

// fixture is a Set resolving from a real DNS server on loopback, with the
// metrics and the log it writes.
type fixture struct {
	dns     *dnstest.Server
	set     *pool.Set
	metrics *metrics.Metrics
	log     *testkit.SyncBuffer
}

func newFixture(t testing.TB, edit ...func(*pool.Options)) *fixture {
	t.Helper()
	f := &fixture{dns: dnstest.Start(t), metrics: metrics.New(), log: &testkit.SyncBuffer{}}
	o := pool.Options{MinTTL: minTTL, MaxTTL: maxTTL, Resolver: f.dns.Addr(), Metrics: f.metrics,
		Logger: slog.New(slog.NewJSONHandler(f.log, nil))}
	for _, e := range edit {
		e(&o)
	}
	f.set = pool.New(o)
	t.Cleanup(f.set.Close)
	return f
}

// graph is one pooled provider per pool, named after it.
func graph(pools ...plan.Pool) *plan.Graph {
	g := &plan.Graph{Pools: pools}
	for i, p := range pools {
		g.Providers = append(g.Providers, plan.Provider{Name: p.Name, Pool: i})
	}
	return g
}

// pick picks for provider 0 of g, failing the test on a refusal.
func (f *fixture) pick(t *testing.T, g *plan.Graph, r *pool.Request) *pool.Pick {
	t.Helper()
	pk, no := f.set.Pick(context.Background(), g, 0, r)
	if no != nil {
		t.Fatalf("Pick refused: %s (%v)", no.Reason, no.Error)
	}
	if len(pk.Endpoints()) == 0 {
		t.Fatal("Pick returned no endpoint")
	}
	return pk
}

// refused picks for provider 0 of g and returns the refusal, failing the
// test on a pick.
func (f *fixture) refused(t *testing.T, g *plan.Graph, r *pool.Request) *admission.Refusal {
	t.Helper()
	pk, no := f.set.Pick(context.Background(), g, 0, r)
	if no == nil {
		t.Fatalf("Pick = %v (%s), want a refusal", pk.Endpoints(), pk.Outcome())
	}
	return no
}

// picks counts pistra_pool_picks_total for provider and outcome.
func (f *fixture) picks(t *testing.T, provider, outcome string) float64 {
	t.Helper()
	return testkit.Counter(t, f.metrics.Registry(), "pistra_pool_picks_total", map[string]string{"provider": provider, "outcome": outcome})
}

// status is provider's entry of the set's status.
func (f *fixture) status(t *testing.T, provider string) pool.Status {
	t.Helper()
	for _, st := range f.set.Status(time.Now()) {
		if st.Provider == provider {
			return st
		}
	}
	t.Fatalf("no status for provider %q", provider)
	return pool.Status{}
}

// eventually waits, boundedly, for cond; what says what was awaited.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// membersAre reports whether provider's set (or subset's) is want.
func (f *fixture) membersAre(t *testing.T, provider string, want ...string) func() bool {
	return func() bool { return slices.Equal(f.status(t, provider).Members, want) }
}

// logLines are the log lines that contain every one of parts.
func (f *fixture) logLines(parts ...string) []string {
	var out []string
	for line := range strings.Lines(f.log.String()) {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			out = append(out, line)
		}
	}
	return out
}

// fakePicker is a picker client scripted per query, recording what it
// was asked and what it was told.
type fakePicker struct {
	mu      sync.Mutex
	script  func(q pool.Query) (*pool.Answer, error)
	queries []pool.Query
	streams []*fakeStream
	closed  bool
}

func (p *fakePicker) Pick(_ context.Context, q pool.Query) (*pool.Answer, error) {
	p.mu.Lock()
	p.queries = append(p.queries, q)
	script := p.script
	p.mu.Unlock()
	a, err := script(q)
	if a != nil {
		st := &fakeStream{}
		a.Stream = st
		p.mu.Lock()
		p.streams = append(p.streams, st)
		p.mu.Unlock()
	}
	return a, err
}

func (p *fakePicker) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

func (p *fakePicker) lastQuery(t *testing.T) pool.Query {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queries) == 0 {
		t.Fatal("the picker was not asked")
	}
	return p.queries[len(p.queries)-1]
}

func (p *fakePicker) lastStream(t *testing.T) *fakeStream {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.streams) == 0 {
		t.Fatal("the picker answered no pick")
	}
	return p.streams[len(p.streams)-1]
}

// picks answers every query with endpoints.
func picks(endpoints ...string) func(pool.Query) (*pool.Answer, error) {
	return func(pool.Query) (*pool.Answer, error) { return &pool.Answer{Endpoints: endpoints}, nil }
}

type fakeStream struct {
	mu     sync.Mutex
	served []string
	done   int
}

func (s *fakeStream) Served(endpoint string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served = append(s.served, endpoint+" "+http.StatusText(status))
}

func (s *fakeStream) Done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done++
}

func (s *fakeStream) state() (served []string, done int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.served), s.done
}

// withPicker has every pool's picker be p, counting the dials.
func withPicker(p *fakePicker, dials *int) func(*pool.Options) {
	return func(o *pool.Options) {
		o.Picker = func(*plan.Pool) (pool.Picker, error) {
			*dials++
			return p, nil
		}
	}
}
