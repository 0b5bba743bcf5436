package proxy

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/upstream"
)

// Pools picks the member of a pool that an attempt on a pooled candidate
// dials (runtime/pool: its DNS member set, checked picks from its endpoint
// picker, else round robin). It is safe for concurrent use.
type Pools interface {
	// Pick chooses the members candidate's provider (an index into
	// g.Providers, pool-backed) may be sent to for r, or refuses: the
	// attempt loop then passes the candidate over untried, counted by the
	// refusal's reason, as it does a gate's. ctx is the client's request's:
	// a picker is not asked on behalf of a client that left.
	Pick(ctx context.Context, g *plan.Graph, provider int, r *PoolRequest) (PoolPick, *admission.Refusal)
}

// PoolRequest is what a pick is told of the request.
type PoolRequest struct {
	// Subset is the candidate's pool_subset, "" for the whole pool.
	Subset string
	// Model is the upstream model the candidate sends; RequestID the
	// request's id.
	Model, RequestID string
	// Header holds what the upstream would be sent of the client's
	// headers (no credential of any kind), and Body the body as it would
	// be sent. Both are the request's: read during Pick, never kept.
	Header http.Header
	Body   []byte
	// Exclude lists the members this request already tried on this
	// candidate, so a retry goes to another where there is one.
	Exclude []string
}

// PoolPick is one pick. Endpoints and Model are read before the first
// attempt; Served and Done tell the picker how the request went.
type PoolPick interface {
	// Endpoints are the members to dial (host:port), in order, at least
	// one, all in the member set the pick was checked against: the first
	// takes the request, the others are tried after a connection failure
	// or on a retry.
	Endpoints() []string
	// Model is the model the picker rewrote the request to, "" when it
	// did not.
	Model() string
	// Served says which endpoint's answer, of which status, is relayed.
	Served(endpoint string, status int)
	// Done ends the pick; called once per pick, when the request is over
	// or moves to another pick.
	Done()
}

// member is the attempt loop's pick for the pooled candidate being tried:
// nil pick for any other. Its methods take a nil *member as one with no
// pick.
type member struct {
	pick PoolPick
	// next indexes pick.Endpoints(): the member the next send dials.
	next int
	// tried are the members dialled for this candidate, for a new pick's
	// Exclude.
	tried []string
	// cand is the candidate as picked: its model is the picker's rewrite
	// when there is one, which is then what is sent, metered and named.
	// orig is the plan's, whose body (askUsage: asking for stream usage) a
	// new pick is told of.
	cand     plan.Candidate
	orig     *plan.Candidate
	askUsage bool
	req      PoolRequest
}

// pickMember asks p.Pools for the members candidate c may be sent to,
// and returns the candidate the attempts send (c, or a copy naming the
// picker's model).
func (p *Proxy) pickMember(x *Exchange, l *loop, c *plan.Candidate, up *upstream.Upstream) (*plan.Candidate, *admission.Refusal) {
	if l.member == nil {
		l.member = &member{}
	}
	m := l.member // its last pick was ended by try, with the claim
	m.tried, m.orig, m.askUsage = m.tried[:0], c, x.asksUsage(c, up)
	m.req = PoolRequest{Subset: c.PoolSubset, Model: c.Model, RequestID: x.RequestID, Header: pickHeader(x, up.Channel(c)),
		Body: x.Body.forCandidate(c, m.askUsage)}
	pick, no := p.Pools.Pick(x.Client.Context(), x.Admission.Graph, c.Provider, &m.req)
	if no != nil {
		return nil, no
	}
	m.cand = *c
	m.take(pick)
	return &m.cand, nil
}

// take makes pick the current one, its model the one sent: the picker's
// rewrite, else the candidate's own. A translated body is pistra's own:
// the picker sees it, and its rewrite of that body is not applied.
func (m *member) take(pick PoolPick) {
	m.pick, m.next = pick, 0
	if m.cand.Translate == plan.TranslateNone {
		m.cand.Model = cmp.Or(pick.Model(), m.req.Model)
	}
}

// pickHeader is what a picker is told of the client's headers: those the
// upstream is sent, minus any credential, with the request's id.
func pickHeader(x *Exchange, ch *upstream.Channel) http.Header {
	h := make(http.Header, 4)
	copyClientHeaders(h, x.Client.Header, ch.Dialect())
	h["Content-Type"] = jsonContentType
	h["X-Request-Id"] = []string{x.RequestID}
	return h
}

// endpoint is the member the next send dials, "" when the candidate is
// not pooled.
func (m *member) endpoint() string {
	if m == nil || m.pick == nil {
		return ""
	}
	return m.pick.Endpoints()[m.next]
}

// dialled records that the current member was sent a request.
func (m *member) dialled() {
	if ep := m.endpoint(); ep != "" && !slices.Contains(m.tried, ep) {
		m.tried = append(m.tried, ep)
	}
}

// walk moves to the next member of the pick's list, after the current one
// did not take the connection; false when the list is spent.
func (m *member) walk() bool {
	if m == nil || m.pick == nil || m.next+1 >= len(m.pick.Endpoints()) {
		return false
	}
	m.next++
	return true
}

// spent reports whether a retry of the pooled candidate needs a new pick:
// the pick's list has no member after the current one. Otherwise it moves
// the retry to that next member (and reports false, as for a candidate
// that is not pooled).
func (m *member) spent() bool {
	return m != nil && m.pick != nil && !m.walk()
}

// repick asks for a new pick for a retry, excluding the members tried
// (which may give one tried already, when the pool has no other). False
// when it is refused: the retry cannot be sent, and the old pick stays,
// its member's answer the last.
func (p *Proxy) repick(x *Exchange, m *member, c *plan.Candidate) bool {
	// The body is made again: the edit sent since may have taken its buffer.
	m.req.Body, m.req.Exclude = x.Body.forCandidate(m.orig, m.askUsage), m.tried
	pick, no := p.Pools.Pick(x.Client.Context(), x.Admission.Graph, c.Provider, &m.req)
	if no != nil {
		return false
	}
	m.end()
	m.take(pick)
	return true
}

// commit tells the pick which member's answer of status is relayed, and
// names the member in the record (Pistra-Endpoint).
func (m *member) commit(x *Exchange, status int) {
	if ep := m.endpoint(); ep != "" {
		x.Record.Endpoint = ep
		m.pick.Served(ep, status)
	}
}

// end closes the pick, if any, and forgets it first, so that nothing, a
// panic inside Done included, closes it twice.
func (m *member) end() {
	if m == nil {
		return
	}
	if pick := m.pick; pick != nil {
		m.pick = nil
		pick.Done()
	}
}

// url is where the attempt on c is sent: the candidate's URL, or for a
// pooled one its route on the member the pick gives now.
func (m *member) url(x *Exchange, c *plan.Candidate, up *upstream.Upstream) *url.URL {
	if m == nil || m.pick == nil {
		return up.URL(c, x.Route)
	}
	m.dialled()
	return up.MemberURL(c, x.Route, m.endpoint())
}
