package server

import (
	"math/bits"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/route"
)

// decide is routing's decision (package route) for x on rt, with the
// exchange's own buffers: the key's access rules and the attempt order.
// The profile's suspended rules deny nothing.
func (s *Server) decide(x *exchange, rt plan.Route) (route.Decision, *dialect.Error) {
	key := ""
	if x.key >= 0 {
		key = x.snap.Graph.Keys[x.key].Name
	}
	x.keyRules.Reset(x.snap.Programs, x.snap.RequestRules[x.profile], key)
	x.keyRules.Suspend(s.rules.Of(x.snap.Graph, x.profile))
	q := route.Query{Profile: x.profile, Route: rt, Model: x.rec.Model}
	d, e := route.Decide(x.snap.Graph, q, &x.caps, &x.keyRules, x.order)
	if d.Selection.Attempt != nil {
		x.order = d.Selection.Attempt[:0] // keep the grown buffer for the next request
	}
	return d, e
}

// countSelection records the candidates selection passed over: skipped
// when a lossless one remains, rejected when none did. One increment per
// capability each would have dropped.
func (s *Server) countSelection(g *plan.Graph, d *route.Decision) {
	action := metrics.DowngradeSkipped
	if d.Selection.Rejected {
		action = metrics.DowngradeRejected
	}
	for _, l := range d.Selection.Passed {
		s.countLosses(g, &d.Candidates[l.Candidate], l.Missing, action)
	}
}

// countLosses records each capability in lost for candidate c.
func (s *Server) countLosses(g *plan.Graph, c *plan.Candidate, lost plan.CapSet, action string) {
	prov := &g.Providers[c.Provider]
	channel := prov.Channels[c.Channel].Name
	for m := uint32(lost); m != 0; m &= m - 1 {
		s.metrics.Downgrade(prov.Name, channel, plan.Cap(bits.TrailingZeros32(m)).String(), action)
	}
}
