package server

import (
	"context"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
	"github.com/pistra/pistra/runtime/proxy"
)

// poolPicks is the attempt loop's pool pick (proxy.Pools) served by the
// server's pool set: the proxy declares what it needs, the pool package
// stays free of the proxy's types.
type poolPicks struct{ set *pool.Set }

var _ proxy.Pools = poolPicks{}

func (p poolPicks) Pick(ctx context.Context, g *plan.Graph, provider int, r *proxy.PoolRequest) (proxy.PoolPick, *admission.Refusal) {
	pk, no := p.set.Pick(ctx, g, provider, (*pool.Request)(r))
	if no != nil {
		return nil, no
	}
	return pk, nil
}

// Refused is what preflight asks of a pooled candidate: whether its
// member set has nobody to dial now. It asks no picker and counts nothing.
func (p poolPicks) Refused(g *plan.Graph, c *plan.Candidate) *admission.Refusal {
	return p.set.Refused(g, c)
}

// poolRefuser is what preflight asks of the attempt loop's pools; a Pools
// without it (a test's) refuses nothing ahead.
type poolRefuser interface {
	Refused(g *plan.Graph, c *plan.Candidate) *admission.Refusal
}

// poolRefused is preflight's view of c's member set, through whichever
// Pools the attempt loop picks with.
func (s *Server) poolRefused(g *plan.Graph, c *plan.Candidate) *admission.Refusal {
	if r, ok := s.proxy.Pools.(poolRefuser); ok {
		return r.Refused(g, c)
	}
	return nil
}
