// Package pool sends a pooled provider's requests to its members: the
// addresses its DNS name (or its subset's) resolves to, re-resolved on the
// records' TTL within bounds, the last good set kept while DNS fails. A
// pool without an endpoint picker spreads requests over the members in
// turn; one with a picker asks it, and every endpoint it names is checked
// against the member set at that moment: an address outside it is
// refused, logged and counted, and the request goes to the members in turn
// instead.
//
// Member sets and picker clients outlive snapshots: a Set keeps them by
// DNS name and pool, a reload keeps what it still uses, and a request
// finds its pool's by the graph it is served under (as circuit.Set does
// its breakers). Nothing here reads a cluster API.
package pool

import (
	"cmp"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Defaults of the re-resolution bounds.
const (
	DefaultMinTTL = time.Second
	DefaultMaxTTL = time.Minute
)

// Metrics is what the set reports to.
type Metrics interface {
	// PoolPick counts one Pick of provider by its outcome.
	PoolPick(provider, outcome string)
	// PoolMembers and PoolGone publish and withdraw a member set's size
	// and age, per provider and subset ("" for the pool's own set).
	PoolMembers(provider, subset string, members int, age time.Duration)
	PoolGone(provider, subset string)
}

// Options configure a Set.
type Options struct {
	// Resolver is the DNS server ("host:port") member sets are resolved
	// with; empty asks the system's resolvers, read from /etc/resolv.conf
	// (with its search list), directly, so the records' TTL is known.
	Resolver string
	// MinTTL and MaxTTL bound how soon and how late a set is resolved
	// again, whatever its records' TTL says (defaults DefaultMinTTL and
	// DefaultMaxTTL); after a failed resolution the next is tried after
	// MinTTL, doubling per failure in a row up to MaxTTL.
	MinTTL, MaxTTL time.Duration
	// Logger defaults to discarding; Metrics is required.
	Logger  *slog.Logger
	Metrics Metrics
	// Picker opens the client of a pool's endpoint picker; nil leaves
	// every picker unreachable (its pools then fail closed or open, as
	// each says).
	Picker Dial
}

// Set is every pooled provider's member sets and picker, across reloads.
// It is safe for concurrent use.
type Set struct {
	opts     Options
	log      *slog.Logger
	resolver resolver

	// loadMu serializes Load and Close; mu guards the maps, which only
	// they change, for the lookups of requests spanning reloads.
	loadMu  sync.Mutex
	mu      sync.Mutex
	byName  map[string]*watcher
	pickers map[string]*picker // by pool name
	users   map[user]bool      // the gauges published
	// retired are the pickers the last Load dropped, closed by the next:
	// the requests of the graph it replaced may still be using them.
	retired []*picker
	serving atomic.Pointer[loaded]
}

// loaded is what the request path reads: the pooled providers of the
// graph last loaded, by provider index, and of the one before it.
type loaded struct {
	g, prev              *plan.Graph
	targets, prevTargets []*target
}

// target is one pooled provider as its graph declares it.
type target struct {
	provider string
	pool     *plan.Pool
	all      *watcher
	subsets  map[string]*watcher
	picker   *picker // nil without one
	failOpen bool
	timeout  time.Duration
}

// New starts an empty set; Load gives it a graph.
func New(o Options) *Set {
	if o.MinTTL <= 0 {
		o.MinTTL = DefaultMinTTL
	}
	if o.MaxTTL <= 0 {
		o.MaxTTL = DefaultMaxTTL
	}
	o.MaxTTL = max(o.MaxTTL, o.MinTTL)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Set{opts: o, log: o.Logger, resolver: resolver{server: o.Resolver},
		byName: map[string]*watcher{}, pickers: map[string]*picker{}, users: map[user]bool{}}
}

// clamp bounds a TTL to [MinTTL, MaxTTL].
func (s *Set) clamp(ttl time.Duration) time.Duration {
	return min(max(ttl, s.opts.MinTTL), s.opts.MaxTTL)
}

// Load makes g's pools those requests find, once g has passed every check
// and just before it serves. A DNS name still in use keeps its watcher
// (and set, and round-robin turn); a new one is resolved before Load
// returns, so g's first requests find its members; the watchers of names
// g no longer uses are stopped. A pool's picker client is kept while its
// declaration is unchanged.
func (s *Set) Load(g *plan.Graph) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	fresh := s.newWatchers(g)
	var wg sync.WaitGroup
	for _, w := range fresh {
		wg.Go(w.start)
	}
	wg.Wait()

	s.mu.Lock()
	maps.Copy(s.byName, fresh)
	retired := s.retired // the previous Load's: the graph using them is leaving
	s.retired = nil
	targets := make([]*target, len(g.Providers))
	users := map[user]bool{}
	for i := range g.Providers {
		if p := &g.Providers[i]; p.Pool >= 0 {
			targets[i] = s.target(p.Name, &g.Pools[p.Pool], users)
		}
	}
	dropped := s.dropUnused(g)
	gone := s.withdraw(users)
	s.retireDropped(g)
	s.mu.Unlock()

	for _, w := range dropped {
		w.close()
	}
	for _, u := range gone {
		s.opts.Metrics.PoolGone(u.provider, u.subset)
	}
	for _, p := range retired {
		p.close()
	}
	l := &loaded{g: g, targets: targets}
	if was := s.serving.Load(); was != nil && was.g != g {
		l.prev, l.prevTargets = was.g, was.targets
	}
	s.serving.Store(l)
	now := time.Now()
	for _, w := range s.watching() {
		w.publish(now)
	}
}

// newWatchers makes the watchers of g's names the set does not watch yet.
func (s *Set) newWatchers(g *plan.Graph) map[string]*watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := map[string]*watcher{}
	for _, name := range dnsNames(g) {
		if s.byName[name] == nil && fresh[name] == nil {
			fresh[name] = newWatcher(s, name)
		}
	}
	return fresh
}

// dnsNames is every DNS name g's pools and their subsets resolve.
func dnsNames(g *plan.Graph) []string {
	var out []string
	for _, p := range g.Pools {
		out = append(out, p.DNS)
		for _, sub := range p.Subsets {
			out = append(out, sub.DNS)
		}
	}
	return out
}

// target builds provider's view of pool p, recording the gauges its sets
// publish in users. s.mu is held.
func (s *Set) target(provider string, p *plan.Pool, users map[user]bool) *target {
	t := &target{provider: provider, pool: p, all: s.byName[p.DNS], failOpen: p.PickerFailure == plan.PickerFailOpen,
		timeout: time.Duration(cmp.Or(p.PickerTimeoutMS, plan.DefaultPickerTimeoutMS)) * time.Millisecond}
	t.all.addUser(user{provider, ""})
	users[user{provider, ""}] = true
	if len(p.Subsets) > 0 {
		t.subsets = make(map[string]*watcher, len(p.Subsets))
	}
	for _, sub := range p.Subsets {
		w := s.byName[sub.DNS]
		t.subsets[sub.Name] = w
		w.addUser(user{provider, sub.Name})
		users[user{provider, sub.Name}] = true
	}
	if p.Picker != "" {
		t.picker = s.pickerFor(p)
	}
	return t
}

// dropUnused forgets the watchers of names g does not use and returns
// them, to be stopped. s.mu is held.
func (s *Set) dropUnused(g *plan.Graph) []*watcher {
	used := dnsNames(g)
	var out []*watcher
	for name, w := range s.byName {
		if !slices.Contains(used, name) {
			delete(s.byName, name)
			out = append(out, w)
		}
	}
	return out
}

// withdraw records the gauges g publishes and returns those no longer
// published; each kept watcher's users are g's from now on. s.mu is held.
func (s *Set) withdraw(users map[user]bool) []user {
	var gone []user
	for u := range s.users {
		if !users[u] {
			gone = append(gone, u)
		}
	}
	s.users = users
	for _, w := range s.byName {
		w.commitUsers()
	}
	return gone
}

// watching is every watcher in use.
func (s *Set) watching() []*watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.byName))
}

// Close stops every watcher and closes every picker client.
func (s *Set) Close() {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.mu.Lock()
	watchers := slices.Collect(maps.Values(s.byName))
	pickers := append(slices.Collect(maps.Values(s.pickers)), s.retired...)
	s.byName, s.pickers, s.retired = map[string]*watcher{}, map[string]*picker{}, nil
	s.mu.Unlock()
	for _, w := range watchers {
		w.close()
	}
	for _, p := range pickers {
		p.close()
	}
}

// find is provider p of graph g as a pool, nil when it is not pooled. A
// request served under a graph two reloads old finds its provider in the
// serving graph by name.
func (s *Set) find(g *plan.Graph, p int) *target {
	l := s.serving.Load()
	if l == nil {
		return nil
	}
	switch g {
	case l.g:
		return l.targets[p]
	case l.prev:
		return l.prevTargets[p]
	}
	name := g.Providers[p].Name
	for _, t := range l.targets {
		if t != nil && t.provider == name {
			return t
		}
	}
	return nil
}

// samePool reports whether two declarations of a pool would be served the
// same by a picker client.
func samePool(a, b *plan.Pool) bool { return reflect.DeepEqual(a, b) }
