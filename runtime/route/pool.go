package route

import (
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// Members is how candidate c is dialled when it is pooled, nil when it has
// a URL of its own: the member set its pool_subset leaves it (the subset's
// DNS name, else the pool's) and whether the pool's endpoint picker or
// round robin chooses the member, with what a failing picker does. It is
// the part of the decision the attempt loop acts on once c is admitted,
// so preflight, explain and `pistrac test` name it as pistrad dials it.
func Members(g *plan.Graph, c *plan.Candidate) *dialect.Pool {
	pool := g.PoolOf(c)
	if pool == nil {
		return nil
	}
	out := &dialect.Pool{Name: pool.Name, Subset: c.PoolSubset, Members: pool.MemberDNS(c.PoolSubset), Pick: dialect.PickRoundRobin}
	if pool.Picker != "" {
		out.Pick, out.Picker = dialect.PickPicker, pool.Picker
		out.PickerFailure, out.PickerTimeoutMS = pool.PickerFailure, pool.PickerTimeoutMS
	}
	return out
}
