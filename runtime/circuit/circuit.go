// Package circuit keeps each provider's circuit breaker: closed while the
// provider answers, open (passed over untried) for a cool-down after too
// many failed attempts in a row, then half-open, when a bounded number of
// probe requests per cool-down are let through and the first verdict
// closes or re-opens it.
//
// A breaker's whole state (closed, open or half-open, since when, and the
// probes taken) is one atomic word, so the hot path is a load on a closed
// breaker and a compare-and-swap on a transition; nothing locks.
//
// Breakers outlive snapshots: a Set keys them by provider name, and a
// reload keeps the state of every provider it still declares. The Set is
// the circuit's admission gate too, passing over the candidates of an
// open circuit.
package circuit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// State is where a breaker is.
type State uint8

const (
	Closed State = iota
	Open
	HalfOpen
)

var stateNames = [...]string{Closed: "closed", Open: "open", HalfOpen: "half_open"}

func (s State) String() string { return stateNames[s] }

// MarshalText spells the state for status answers.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// The word packs, low bits first: the state (2 bits), the probes taken in
// the current half-open window (6 bits, up to plan.MaxHalfOpenProbes), and
// the time the state began, in milliseconds since the Unix epoch.
const (
	stateBits = 2
	probeBits = 6
	probeMask = 1<<probeBits - 1
	timeShift = stateBits + probeBits
)

func pack(s State, probes uint64, since time.Time) uint64 {
	return uint64(since.UnixMilli())<<timeShift | probes<<stateBits | uint64(s)
}

func stateOf(w uint64) State     { return State(w & (1<<stateBits - 1)) }
func probesOf(w uint64) uint64   { return w >> stateBits & probeMask }
func sinceOf(w uint64) time.Time { return time.UnixMilli(int64(w >> timeShift)) }
func elapsed(w uint64, now time.Time) time.Duration {
	return time.Duration(now.UnixMilli()-int64(w>>timeShift)) * time.Millisecond
}

// Config is a breaker's policy.
type Config struct {
	// Failures is how many failed attempts in a row open the breaker.
	Failures int64
	// CoolDown is how long it stays open, and how long a half-open window
	// waits for a probe's verdict before letting new probes through.
	CoolDown time.Duration
	// Probes is how many requests a half-open window lets through.
	Probes uint64
}

func configOf(c *plan.Circuit) Config {
	return Config{Failures: int64(c.Failures), CoolDown: time.Duration(c.CoolDownMS) * time.Millisecond, Probes: uint64(c.HalfOpenProbes)}
}

// Change is told of every transition, for the log.
type Change func(provider string, from, to State, failures int64)

// Breaker is one provider's circuit breaker. It is safe for concurrent use.
type Breaker struct {
	name   string
	word   atomic.Uint64
	fails  atomic.Int64 // consecutive failed attempts
	cfg    atomic.Pointer[Config]
	change Change
}

// Allow reports whether a request may be sent to the provider at now. A
// closed breaker allows everything; an open one nothing until its
// cool-down has passed, when it turns half-open; a half-open one allows
// Probes requests per cool-down, and probe is the one taken. When it
// refuses, wait is how long until it may allow one again.
func (b *Breaker) Allow(now time.Time) (probe Probe, ok bool, wait time.Duration) {
	cfg := b.cfg.Load()
	for {
		w := b.word.Load()
		switch stateOf(w) {
		case Closed:
			return Probe{}, true, 0
		case Open:
			if left := cfg.CoolDown - elapsed(w, now); left > 0 {
				return Probe{}, false, left
			}
			if b.word.CompareAndSwap(w, pack(HalfOpen, 0, now)) {
				b.changed(Open, HalfOpen)
			}
		case HalfOpen:
			left := cfg.CoolDown - elapsed(w, now)
			if left <= 0 {
				// No verdict came within a cool-down (the probes were
				// cancelled or are still running): a new window.
				b.word.CompareAndSwap(w, pack(HalfOpen, 0, now))
				continue
			}
			n := probesOf(w)
			if n >= cfg.Probes {
				return Probe{}, false, left
			}
			if b.word.CompareAndSwap(w, w&^(probeMask<<stateBits)|(n+1)<<stateBits) {
				return Probe{b: b, window: w >> timeShift}, true, 0
			}
		}
	}
}

// Probe is a half-open breaker's probe, taken by Allow; the zero Probe is
// none (the breaker was closed).
type Probe struct {
	b *Breaker
	// window is when the half-open window it was taken in began, as the
	// word stores it.
	window uint64
}

// Taken reports whether p is a probe at all.
func (p Probe) Taken() bool { return p.b != nil }

// Return gives the probe back when no verdict came since it was taken: the
// breaker is still in the same half-open window. A probe whose request was
// never sent (held back by a later gate, or its client gone first) or got
// an answer that is neither success nor failure (a 429) would otherwise
// keep the provider out for another cool-down with nothing learnt.
// Returning a probe whose verdict came, or of a window since renewed,
// changes nothing.
func (p Probe) Return() {
	if p.b == nil {
		return
	}
	for {
		w := p.b.word.Load()
		if stateOf(w) != HalfOpen || w>>timeShift != p.window || probesOf(w) == 0 {
			return
		}
		if p.b.word.CompareAndSwap(w, w-1<<stateBits) { // one probe fewer taken
			return
		}
	}
}

// Peek reports what Allow would say at now without taking a probe or
// turning the breaker half-open: what preflight shows.
func (b *Breaker) Peek(now time.Time) (ok bool, wait time.Duration) {
	cfg := b.cfg.Load()
	w := b.word.Load()
	left := cfg.CoolDown - elapsed(w, now)
	switch {
	case stateOf(w) == Closed, left <= 0:
		return true, 0
	case stateOf(w) == HalfOpen && probesOf(w) < cfg.Probes:
		return true, 0
	}
	return false, left
}

// Success records an attempt the provider answered (any status but a
// counted failure): the failure run ends, and a half-open breaker closes.
func (b *Breaker) Success(now time.Time) {
	if b.fails.Load() != 0 {
		b.fails.Store(0)
	}
	b.leave(HalfOpen, Closed, now)
}

// leave moves the breaker from state from to to, retrying while other
// probes change the word under it (taken or given back), so a verdict is
// never lost to a concurrent probe; it reports whether it moved.
func (b *Breaker) leave(from, to State, now time.Time) bool {
	for {
		w := b.word.Load()
		if stateOf(w) != from {
			return false
		}
		if b.word.CompareAndSwap(w, pack(to, 0, now)) {
			b.changed(from, to)
			return true
		}
	}
}

// Failure records a failed attempt: the run grows, and a closed breaker
// whose run reaches Failures opens, as does a half-open one at once. A
// failure while open (an attempt sent before it opened) changes nothing.
func (b *Breaker) Failure(now time.Time) {
	n := b.fails.Add(1)
	if b.leave(HalfOpen, Open, now) {
		return
	}
	if n >= b.cfg.Load().Failures {
		b.leave(Closed, Open, now)
	}
}

func (b *Breaker) changed(from, to State) {
	if b.change != nil {
		b.change(b.name, from, to, b.fails.Load())
	}
}

// Status is a breaker's state as the admin status shows it.
type Status struct {
	Provider string `json:"provider"`
	State    State  `json:"state"`
	// Failures is the current run of failed attempts.
	Failures  int64 `json:"consecutive_failures"`
	Threshold int64 `json:"failures_to_open"`
	// Since is when the state began (zero for a breaker never opened);
	// RetryAt, for an open or half-open breaker, is when it next lets a
	// request through, at the latest.
	Since   *time.Time `json:"since,omitempty"`
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Probes is how many probes the current half-open window let through.
	Probes uint64 `json:"probes,omitempty"`
}

// Status reads the breaker at now.
func (b *Breaker) Status(now time.Time) Status {
	cfg := b.cfg.Load()
	w := b.word.Load()
	st := Status{Provider: b.name, State: stateOf(w), Failures: b.fails.Load(), Threshold: cfg.Failures, Probes: probesOf(w)}
	if w>>timeShift != 0 {
		since := sinceOf(w).UTC()
		st.Since = &since
	}
	if st.State != Closed {
		at := sinceOf(w).Add(cfg.CoolDown).UTC()
		st.RetryAt = &at
	}
	return st
}

// Set is the breakers of every provider whose policy names one, by name,
// across reloads. It is also their admission gate (gate.go): the
// breakers are the circuit's own state, kept here rather than in the
// serving snapshot, and found by the graph a request is served under.
type Set struct {
	mu     sync.Mutex
	byName map[string]*Breaker
	change Change
	// serving is the breakers of the graph last loaded, indexed like its
	// providers: what the request path reads.
	serving atomic.Pointer[loaded]
}

type loaded struct {
	g        *plan.Graph
	breakers []*Breaker
	// prev is the graph loaded before g, with its providers' breakers as
	// g's load left them: the requests that span a reload find theirs
	// without the lock.
	prev         *plan.Graph
	prevBreakers []*Breaker
}

// breakersOf indexes byName's breakers like g's providers.
func breakersOf(g *plan.Graph, byName map[string]*Breaker) []*Breaker {
	out := make([]*Breaker, len(g.Providers))
	for i := range g.Providers {
		if g.Providers[i].Circuit != nil {
			out[i] = byName[g.Providers[i].Name]
		}
	}
	return out
}

// NewSet starts an empty set; change, if not nil, is told of every
// transition.
func NewSet(change Change) *Set { return &Set{byName: map[string]*Breaker{}, change: change} }

// Load makes g's the breakers requests find, just before g serves. A
// provider the set already knows keeps its state under its new
// configuration; the breakers of providers g no longer declares, or
// declares without a circuit, are dropped.
func (s *Set) Load(g *plan.Graph) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Breaker, len(g.Providers))
	keep := make(map[string]*Breaker, len(s.byName))
	for i := range g.Providers {
		p := &g.Providers[i]
		if p.Circuit == nil {
			continue
		}
		b := s.byName[p.Name]
		if b == nil {
			b = &Breaker{name: p.Name, change: s.change}
		}
		cfg := configOf(p.Circuit)
		b.cfg.Store(&cfg)
		out[i], keep[p.Name] = b, b
	}
	s.byName = keep
	l := &loaded{g: g, breakers: out}
	if was := s.serving.Load(); was != nil && was.g != g {
		l.prev, l.prevBreakers = was.g, breakersOf(was.g, keep)
	}
	s.serving.Store(l)
}

// Breaker is provider p of graph g's breaker, nil when it has none. A
// request still served under a graph a reload replaced finds its
// provider's breaker by name: the same breaker, since the state is the
// provider's, not the graph's.
func (s *Set) Breaker(g *plan.Graph, p int) *Breaker {
	if l := s.serving.Load(); l != nil {
		switch g {
		case l.g:
			return l.breakers[p]
		case l.prev:
			return l.prevBreakers[p]
		}
	}
	if g.Providers[p].Circuit == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName[g.Providers[p].Name]
}

// Status reads every breaker of the graph last loaded at now, in the
// order of its providers.
func (s *Set) Status(now time.Time) []Status {
	l := s.serving.Load()
	if l == nil {
		return nil
	}
	var out []Status
	for _, b := range l.breakers {
		if b != nil {
			out = append(out, b.Status(now))
		}
	}
	return out
}
