package probe

import (
	"github.com/pistra/pistra/runtime/plan"
)

// routeBody is a minimal request on a route other than the capability
// route, in the route's own shape.
func routeBody(r plan.Route, model string) ([]byte, int) {
	switch r {
	case plan.RouteResponses:
		return body(map[string]any{"model": model, "input": baselineText, "max_output_tokens": 16}), 16
	case plan.RouteCompletions:
		return body(map[string]any{"model": model, "prompt": baselineText, "max_tokens": 16}), 16
	case plan.RouteEmbeddings:
		return body(map[string]any{"model": model, "input": baselineText}), 0
	}
	return nil, 0
}

func routeCall(r plan.Route) string { return "route " + string(r) }

// routeCalls are one call per other declared route some plan sends the
// channel a model on.
func (t *Target) routeCalls() []Call {
	var out []Call
	for _, rm := range t.Routes {
		b, maxOut := routeBody(rm.Route, rm.Model)
		if rm.Model != "" && b != nil {
			out = append(out, Call{Name: routeCall(rm.Route), Route: rm.Route, Body: b, MaxOutput: maxOut})
		}
	}
	return out
}

// judgeRoutes says which declared routes answered (a 2xx) and how the
// others refused.
func (t *Target) judgeRoutes(got answers) []RouteFinding {
	var out []RouteFinding
	for _, rm := range t.Routes {
		a, called := got[routeCall(rm.Route)]
		f := RouteFinding{Route: rm.Route}
		switch {
		case !called:
			f.Evidence = "not called: no plan sends the channel a model on it"
		case a.ok():
			f.Answered, f.Evidence = true, "answered "+rm.Model
		default:
			f.Evidence = a.refusal()
		}
		out = append(out, f)
	}
	return out
}
