package upstream

import (
	"net/url"

	"github.com/pistra/pistra/runtime/plan"
)

// A pool-backed provider has no URL of its own: each of its channels keeps
// a template per route, with the pool's scheme and no host, and every
// attempt puts the member picked for it there.

// poolScheme is the scheme p's pool members are reached over, "" when p
// is not pool-backed.
func poolScheme(g *plan.Graph, p *plan.Provider) string {
	if p.Pool < 0 || p.Pool >= len(g.Pools) {
		return ""
	}
	return g.Pools[p.Pool].Scheme
}

// poolBase is where a pool member serves the API below its host: vLLM and
// the other OpenAI-compatible servers answer on /v1.
const poolBase = "/v1"

// poolHost stands in for a member while a pooled channel's URLs are
// parsed and checked; the templates keep no host.
const poolHost = "member.pool"

// Pooled reports whether candidate c is sent to a member of its provider's
// pool (MemberURL) rather than to a fixed URL.
func (u *Upstream) Pooled(c *plan.Candidate) bool {
	return c.Channel >= 0 && c.Channel < len(u.channels) && u.channels[c.Channel].pooled
}

// MemberURL is where candidate c is sent on pool member endpoint
// (host:port) for a request that arrived on inbound: the channel's route
// on that member. It is nil where URL is.
func (u *Upstream) MemberURL(c *plan.Candidate, inbound plan.Route, endpoint string) *url.URL {
	tmpl := u.URL(c, inbound)
	if tmpl == nil {
		return nil
	}
	m := *tmpl
	m.Host = endpoint
	return &m
}
