package server

import (
	"context"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
	"github.com/pistra/pistra/runtime/proxy"
)

// Pools are the server's pool picks: the attempt loop's (proxy.Pools),
// and preflight's question of a pooled candidate, whether its member set
// has nobody to dial now, asked of the same picks so that the two agree.
type Pools interface {
	proxy.Pools
	// Refused asks no picker and counts nothing; nil for a candidate that
	// is not pooled.
	Refused(g *plan.Graph, c *plan.Candidate) *admission.Refusal
}

// poolPicks is the attempt loop's pool pick (proxy.Pools) served by the
// server's pool set: the proxy declares what it needs, the pool package
// stays free of the proxy's types.
type poolPicks struct{ set *pool.Set }

var _ Pools = poolPicks{}

func (p poolPicks) Pick(ctx context.Context, g *plan.Graph, provider int, r *proxy.PoolRequest) (proxy.PoolPick, *admission.Refusal) {
	pk, no := p.set.Pick(ctx, g, provider, (*pool.Request)(r))
	if no != nil {
		return nil, no
	}
	return pk, nil
}

func (p poolPicks) Refused(g *plan.Graph, c *plan.Candidate) *admission.Refusal {
	return p.set.Refused(g, c)
}
