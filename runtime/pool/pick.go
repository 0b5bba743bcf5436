package pool

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// Outcomes of a Pick, as pistra_pool_picks_total counts them.
const (
	// OutcomePicked: the picker's endpoints, all in the member set.
	OutcomePicked = "picked"
	// OutcomeRefused: the picker named an address outside the member set;
	// the request went to the members in turn.
	OutcomeRefused = "refused"
	// OutcomeRoundRobin: the pool has no picker; the members in turn.
	OutcomeRoundRobin = "round_robin"
	// OutcomeFallback: the picker failed and the pool fails open; the
	// members in turn.
	OutcomeFallback = "fallback"
	// OutcomePickerError: the picker failed and the pool fails closed.
	OutcomePickerError = "picker_error"
	// OutcomeShed: the picker shed the request (its 429).
	OutcomeShed = "shed"
	// OutcomeNoMember: no member to send the request to.
	OutcomeNoMember = "no_member"
)

// Refusal reasons of a Pick (pistra_failover_skipped_total's reason).
const (
	ReasonNoMember          = string(dialect.CodePoolNoMember)
	ReasonPickerUnavailable = string(dialect.CodePickerUnavailable)
	ReasonPickerShed        = string(dialect.CodePickerShed)
)

// Request is what a pick knows of the request.
type Request struct {
	// Subset is the profile's pool subset; empty for the whole pool.
	Subset string
	// Model is the upstream model the body names.
	Model     string
	RequestID string
	// Header is the client's headers; credentials are never passed on.
	Header http.Header
	// Body is the body as it would be sent upstream.
	Body []byte
	// Exclude are the members this request has already tried: a retry goes
	// to another member where there is one.
	Exclude []string
}

// Pick is where one request goes.
type Pick struct {
	endpoints []string
	outcome   string
	model     string
	stream    Stream // the picker's exchange; nil without one
	one       [1]string
	done      atomic.Bool
}

// Endpoints are host:port members, in order: the first to dial, the rest
// to fall back to on a connect failure or a retry. Never empty, every one
// in the member set when the pick was made.
func (p *Pick) Endpoints() []string { return p.endpoints }

// Outcome is how the pick was made (OutcomePicked, ...).
func (p *Pick) Outcome() string { return p.outcome }

// Model is the model the picker's body rewrite names, when it changed the
// request's: the caller edits the body's model to it (never sending the
// picker's body itself) and meters it. Empty otherwise.
func (p *Pick) Model() string { return p.model }

// Served tells the picker which endpoint answered, with status, at the
// response's headers; nothing without a picker.
func (p *Pick) Served(endpoint string, status int) {
	if p.stream != nil && !p.done.Load() {
		p.stream.Served(endpoint, status)
	}
}

// Done ends the picker's exchange: the request is over. Only the first
// call does anything; nothing without a picker.
func (p *Pick) Done() {
	if p.stream != nil && p.done.CompareAndSwap(false, true) {
		p.stream.Done()
	}
}

// Pick chooses provider p's members for request r of graph g: the
// picker's checked pick, or the members in turn. ctx bounds the picker's
// exchange, which lasts until Done. A refusal passes the candidate over;
// its Error is the client's answer when nothing else serves.
func (s *Set) Pick(ctx context.Context, g *plan.Graph, p int, r *Request) (*Pick, *admission.Refusal) {
	t, w, no := s.set(g, p, r.Subset)
	if no != nil {
		if t != nil {
			s.count(t, OutcomeNoMember)
		}
		return nil, no
	}
	if t.picker == nil {
		return s.inTurn(t, w, r, OutcomeRoundRobin)
	}
	return s.ask(ctx, t, w, r)
}

// Refused is what a pick for candidate c would say now, without making
// it (no picker asked, nothing counted): why no member can take it, nil
// when one can or c is not pooled. What preflight shows.
func (s *Set) Refused(g *plan.Graph, c *plan.Candidate) *admission.Refusal {
	if g.Providers[c.Provider].Pool < 0 {
		return nil
	}
	t, w, no := s.set(g, c.Provider, c.PoolSubset)
	if no == nil && len(w.cur.Load().names) == 0 {
		no = noMembers(t.provider, c.PoolSubset)
	}
	return no
}

// set is provider p's pool and the member set a request bound to subset
// draws from; the target is nil when p is not a pool this set loaded.
func (s *Set) set(g *plan.Graph, p int, subset string) (*target, *watcher, *admission.Refusal) {
	t := s.find(g, p)
	if t == nil {
		return nil, nil, noMember(g.Providers[p].Name, subset, "is not a pool this gateway has loaded")
	}
	if subset == "" {
		return t, t.all, nil
	}
	if w := t.subsets[subset]; w != nil {
		return t, w, nil
	}
	return t, nil, noMember(t.provider, subset, "has no such subset")
}

// inTurn is the next member of w's set in turn, skipping those r tried
// while another is left, counted as outcome.
func (s *Set) inTurn(t *target, w *watcher, r *Request, outcome string) (*Pick, *admission.Refusal) {
	m := w.cur.Load()
	n := uint64(len(m.names))
	if n == 0 {
		s.count(t, OutcomeNoMember)
		return nil, noMembers(t.provider, r.Subset)
	}
	start := w.cursor.Add(1) - 1
	i := start % n
	for k := range n {
		if j := (start + k) % n; !slices.Contains(r.Exclude, m.names[j]) {
			i = j
			break
		}
	}
	s.count(t, outcome)
	pk := &Pick{outcome: outcome}
	pk.one[0] = m.names[i]
	pk.endpoints = pk.one[:]
	return pk, nil
}

func (s *Set) count(t *target, outcome string) { s.opts.Metrics.PoolPick(t.provider, outcome) }

func noMember(provider, subset, why string) *admission.Refusal {
	name := "pool of provider " + quote(provider)
	if subset != "" {
		name = "subset " + quote(subset) + " of the " + name
	}
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodePoolNoMember, "the %s %s", name, why)
	e.Transient = true
	return &admission.Refusal{Reason: ReasonNoMember, Error: e}
}

func noMembers(provider, subset string) *admission.Refusal {
	return noMember(provider, subset, "has no members: its DNS name resolves to no address")
}

func quote(s string) string { return `"` + s + `"` }
