package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/route"
)

// Metrics and log route labels of the preflight endpoints.
const (
	routePreflight      = "preflight"
	routeAdminPreflight = "admin_preflight"
)

// preflight answers POST /v1/preflight for the caller's own key. The body
// is exactly what the caller would send; the route comes from ?route=, by
// default messages for a caller sending anthropic-version and
// chat_completions otherwise.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	for _, k := range plan.ServiceKinds {
		if r.URL.Query().Get("route") == string(k.Route()) {
			s.preflightCall(w, r, k)
			return
		}
	}
	route, e := preflightRoute(r)
	x := s.newExchange(w, r, routePreflight, route.Dialect())
	s.runPreflight(x, route, e, s.checkRequest)
}

// Preflight answers POST /admin/v1/preflight on behalf of the key named
// key, which needs no credential of the key's own. It writes nothing and
// returns admin.ErrUnknownKey when the policy has no such key.
func (s *Server) Preflight(w http.ResponseWriter, r *http.Request, key string) error {
	snap := s.snap.Load()
	ki, profile, ok := snap.KeyNamed(key)
	if !ok {
		return fmt.Errorf("%w: %q", admin.ErrUnknownKey, truncate(key, 80))
	}
	route, e := preflightRoute(r)
	x := s.newExchange(w, r, routeAdminPreflight, route.Dialect())
	x.snap, x.key, x.profile, x.rec.OnBehalfOf = snap, ki, profile, key
	x.rec.Profile = snap.Graph.Profiles[profile].Name
	e = cmp.Or(e, s.suspensions.Key(key))
	s.runPreflight(x, route, e, s.readRequest)
	return nil
}

// runPreflight admits x the way its endpoint requires, then answers with
// the decision a real request would reach, or the refusal it would get.
func (s *Server) runPreflight(x *exchange, route plan.Route, e *dialect.Error, admit func(*exchange, plan.Route) *dialect.Error) {
	defer s.recoverPanic(x)
	if e == nil {
		e = admit(x, route)
	}
	if e == nil {
		e = s.answerPreflight(x, route)
	}
	if e != nil {
		s.refuse(x, e)
	}
	s.end(x)
}

// preflightRoute reads ?route=. On error the route returned is the caller's
// dialect default, so the refusal is in the dialect it speaks.
func preflightRoute(r *http.Request) (plan.Route, *dialect.Error) {
	def := plan.RouteChatCompletions
	if dialectOf(r) == plan.DialectAnthropic {
		def = plan.RouteMessages
	}
	v := r.URL.Query().Get("route")
	if v == "" {
		return def, nil
	}
	names := make([]string, len(plan.Routes))
	for i, rt := range plan.Routes {
		if string(rt) == v {
			return rt, nil
		}
		names[i] = string(rt)
	}
	return def, &dialect.Error{Status: http.StatusBadRequest, Code: dialect.CodeUnknownRoute, Param: "route",
		Message: fmt.Sprintf("route %s is not an inference route; routes: %s", route.Quote(v), strings.Join(names, ", "))}
}

// answerPreflight runs the same decision as forward and writes it out.
func (s *Server) answerPreflight(x *exchange, rt plan.Route) *dialect.Error {
	d, e := s.decide(x, rt)
	if e != nil {
		return e
	}
	g := x.snap.Graph
	a := route.NewAnswer(g, x.rec.OnBehalfOf, &d)
	// The attempt loop's own test of each candidate, translation included,
	// so a body the translator refuses is refused here too.
	px := proxy.Exchange{Client: x.r, Route: rt, Body: &x.body, Upstreams: x.snap.Upstreams, Candidates: d.Candidates}
	var refused *dialect.Error
	sent := false
	for _, ci := range d.Selection.Attempt {
		c := &d.Candidates[ci]
		ok, e := s.proxy.Prepare(&px, c)
		if ok {
			if no := cmp.Or(s.suspended(x, c), s.circuits.Refused(x.snap.Graph, c), s.picks.Refused(x.snap.Graph, c)); no != nil {
				if no.Final && !sent {
					// A suspended primary refuses the request, as in the
					// attempt loop, unless a candidate before it is sent.
					return no.Error
				}
				a.PassOver(g, c, no.Reason, no.Error.RetryAfter)
				refused = cmp.Or(refused, no.Error)
				continue
			}
			a.Attempt(g, c, d.Used)
			sent = true
		} else {
			refused = cmp.Or(refused, e)
		}
	}
	if !a.Finish() {
		return cmp.Or(refused, proxy.Unservable(x.rec.Model))
	}
	x.rec.Origin = a.Serve.Origin
	x.rec.SetOriginHeader(x.w.Header())
	return writePreflight(x, a)
}

// writePreflight answers a preflight with its report a, as JSON.
func writePreflight(x *exchange, a any) *dialect.Error {
	b, err := json.Marshal(a)
	if err != nil {
		return dialect.Errorf(http.StatusInternalServerError, dialect.CodeInternal, "encoding the preflight answer: %v", err)
	}
	x.rec.Status = http.StatusOK
	dialect.WriteJSON(&x.w, http.StatusOK, b)
	return nil
}

// suspended is what the attempt loop's suspension check says of c, nil
// when its provider is not suspended (or there are no suspensions).
func (s *Server) suspended(x *exchange, c *plan.Candidate) *admission.Refusal {
	_, no := s.suspensions.Admit(&admission.Request{Graph: x.snap.Graph}, c)
	return no
}
