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
)

// Metrics and log route labels of the preflight endpoints.
const (
	routePreflight      = "preflight"
	routeAdminPreflight = "admin_preflight"
)

// preflightNote is what every preflight answer says about itself.
const preflightNote = "no upstream call was made: this answers routing and fidelity only " +
	"(which candidate would serve and what it would drop, past suspended providers and open circuits), " +
	"not availability, budgets or output"

// preflightAnswer is the body of a successful preflight.
type preflightAnswer struct {
	Performed bool       `json:"performed"`
	Note      string     `json:"note"`
	Route     plan.Route `json:"route"`
	Model     string     `json:"model"`
	Profile   string     `json:"profile"`
	// Key is the key an admin preflight acted for.
	Key            string          `json:"key,omitempty"`
	RequireCaps    plan.CapSet     `json:"require_caps"`
	OnFidelityLoss plan.LossAction `json:"on_fidelity_loss"`
	Capabilities   capsRead        `json:"capabilities"`
	// Serve is the first candidate the attempt loop would try; Lossy says
	// it was allowed despite dropping Serve.Lost.
	Serve        dialect.Candidate   `json:"serve"`
	Lossy        bool                `json:"lossy"`
	AttemptOrder []dialect.Candidate `json:"attempt_order"`
	// PassedOver are candidates selection set aside for a lossless one.
	PassedOver []dialect.Candidate `json:"passed_over"`
	// Skipped are candidates the policy ruled out at build time.
	Skipped []skipped `json:"skipped"`
}

// capsRead says whether the body was read for capabilities (it is not when
// no candidate could drop anything readable) and what it uses.
type capsRead struct {
	Read bool        `json:"read"`
	Used plan.CapSet `json:"used"`
}

type skipped struct {
	Provider string      `json:"provider"`
	Channel  string      `json:"channel,omitempty"`
	Model    string      `json:"model,omitempty"`
	Reason   string      `json:"reason"`
	Missing  plan.CapSet `json:"missing,omitempty"`
	// Translate is the pair a skipped translation candidate would have
	// ridden.
	Translate plan.Translation `json:"translate,omitempty"`
	// RetryAfterMS is, for a candidate passed over now (circuit_open),
	// how long until it may be admitted again.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

// preflight answers POST /v1/preflight for the caller's own key. The body
// is exactly what the caller would send; the route comes from ?route=, by
// default messages for a caller sending anthropic-version and
// chat_completions otherwise.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
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
		Message: fmt.Sprintf("route %s is not an inference route; routes: %s", quote(v), strings.Join(names, ", "))}
}

// answerPreflight runs the same decision as forward and writes it out.
func (s *Server) answerPreflight(x *exchange, route plan.Route) *dialect.Error {
	d, e := s.decide(x, route)
	if e != nil {
		return e
	}
	g := x.snap.Graph
	prof := &g.Profiles[x.profile]
	a := preflightAnswer{
		Note: preflightNote, Route: route, Model: x.rec.Model, Profile: prof.Name, Key: x.rec.OnBehalfOf,
		RequireCaps: prof.RequireCaps, OnFidelityLoss: x.snap.OnFidelityLoss(x.profile),
		Capabilities: capsRead{Read: d.read, Used: d.used}, Lossy: d.sel.Lossy,
		AttemptOrder: make([]dialect.Candidate, 0, len(d.sel.Attempt)),
		PassedOver:   make([]dialect.Candidate, 0, len(d.sel.Passed)),
		Skipped:      skipsOf(g, d.skips),
	}
	// The attempt loop's own test of each candidate, translation included,
	// so a body the translator refuses is refused here too.
	px := proxy.Exchange{Client: x.r, Route: route, Body: &x.body, Upstreams: x.snap.Upstreams, Candidates: d.cands}
	var refused *dialect.Error
	for _, ci := range d.sel.Attempt {
		c := &d.cands[ci]
		ok, e := px.Prepare(c)
		if ok {
			if no := cmp.Or(s.suspended(x, c), s.circuits.Refused(x.snap.Graph, c)); no != nil {
				if no.Final {
					return no.Error // a suspended primary refuses the request
				}
				prov := &g.Providers[c.Provider]
				a.Skipped = append(a.Skipped, skipped{Provider: prov.Name, Channel: prov.Channels[c.Channel].Name, Model: c.Model, Reason: no.Reason,
					RetryAfterMS: no.Error.RetryAfter.Milliseconds()})
				refused = cmp.Or(refused, no.Error)
				continue
			}
			a.AttemptOrder = append(a.AttemptOrder, describe(g, c, d.used))
		} else {
			refused = cmp.Or(refused, e)
		}
	}
	if len(a.AttemptOrder) == 0 {
		return cmp.Or(refused, proxy.Unservable(x.rec.Model))
	}
	for _, l := range d.sel.Passed {
		a.PassedOver = append(a.PassedOver, describe(g, &d.cands[l.Candidate], d.used))
	}
	a.Serve = a.AttemptOrder[0]
	x.rec.Origin = a.Serve.Origin
	x.rec.SetOriginHeader(x.w.Header())
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

// skipsOf lists a decision's skips (the plan's and the key's rules') with
// their reasons.
func skipsOf(g *plan.Graph, sks []plan.Skip) []skipped {
	out := make([]skipped, 0, len(sks))
	for _, sk := range sks {
		prov := &g.Providers[sk.Provider]
		o := skipped{Provider: prov.Name, Model: sk.Model, Reason: sk.Reason, Missing: sk.Missing, Translate: sk.Translate}
		if sk.Channel >= 0 && sk.Channel < len(prov.Channels) {
			o.Channel = prov.Channels[sk.Channel].Name
		}
		out = append(out, o)
	}
	return out
}
