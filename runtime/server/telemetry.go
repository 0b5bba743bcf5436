package server

import (
	"time"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/route"
)

// observeInference records an inference request in the GenAI metrics and
// ends its span, from its record; now is its end, d its duration.
func (s *Server) observeInference(x *exchange, now time.Time, d time.Duration) {
	r := &x.rec
	op := plan.Route(r.Route).Operation()
	model := metrics.OtherModel
	if x.snap != nil {
		model = metrics.ModelLabel(x.snap.Graph.Names, r.Model)
	}
	sv := metrics.Served{Operation: op, Provider: r.ProviderLabel(), RequestModel: model, ErrorType: r.ErrorType(), Duration: d}
	if c := r.Served; c != nil {
		sv.ResponseModel = c.Model
	}
	if r.Streamed && !r.Sent.IsZero() {
		sv.FirstToken, sv.OutputTokens = r.Sent.Sub(r.Start), r.Usage.OutputTokens
	}
	s.metrics.Served(&sv)
	x.trace.End(r, op, model, now)
}

// countTokens counts what any served request or session reported, per
// token class: a WebSocket session's usage too, though its duration has
// no place in the GenAI request histograms.
func (s *Server) countTokens(r *record.Record) {
	if c := r.Served; c != nil && r.Usage.Reported {
		s.metrics.Tokens(plan.Route(r.Route).Operation(), r.Provider, c.Model, &r.Usage)
	}
}

// traceDecision puts on x's span what routing decided: the key's name,
// the plan, and the candidates selection passed over for a capability
// they would drop.
func (s *Server) traceDecision(x *exchange, d *route.Decision) {
	g := x.snap.Graph
	key := ""
	if x.key >= 0 {
		key = g.Keys[x.key].Name
	}
	x.trace.Decided(key, g.PlanID(d.Plan))
	for _, l := range d.Selection.Passed {
		x.trace.Skip(g.Providers[d.Candidates[l.Candidate].Provider].Name, string(dialect.CodeFidelityLoss), false)
	}
}
