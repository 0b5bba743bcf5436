package server

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// maxListed bounds how many names an error message lists.
const maxListed = 50

// modelError explains why (profile, route, name) has no plan: the catalog
// does not serve the name at all (404), the profile may use it but not on
// this route (404, naming the routes it answers on, which the graph
// carries), or the profile may not use it (403). Each message lists what
// the key may use on this route.
func modelError(g *plan.Graph, profile int, route plan.Route, name string) *dialect.Error {
	e := &dialect.Error{Param: "model"}
	routes := g.RoutesOf(profile, name)
	switch {
	case !g.Known(name):
		e.Status, e.Code = http.StatusNotFound, dialect.CodeModelNotFound
		e.Message = "model " + quote(name) + " does not exist"
	case len(routes) > 0:
		e.Status, e.Code = http.StatusNotFound, dialect.CodeModelNotOnRoute
		paths := make([]string, len(routes))
		for i, r := range routes {
			paths[i] = "/v1/" + routePath(r)
		}
		e.Message = "model " + quote(name) + " is not served on /v1/" + routePath(route) +
			"; it answers on " + strings.Join(paths, ", ")
	default:
		e.Status, e.Code = http.StatusForbidden, dialect.CodeModelNotAllowed
		e.Message = "model " + quote(name) + " is not allowed for this key"
	}
	e.Message += "; " + available(g.Listed(profile, route))
	return e
}

func routePath(r plan.Route) string {
	if r == plan.RouteChatCompletions {
		return "chat/completions"
	}
	return string(r)
}

// available renders the names a key may use, bounded.
func available(names []string) string {
	if len(names) == 0 {
		return "this key may use no model here"
	}
	var b strings.Builder
	b.WriteString("models available to this key: ")
	for i, n := range names {
		if i == maxListed {
			fmt.Fprintf(&b, ", and %d more", len(names)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}

// noCandidateError explains a plan whose every candidate the policy ruled
// out, listing each skip. When an access rule took a candidate out, the
// refusal is that rule's: its code and message, as the policy promises.
func noCandidateError(g *plan.Graph, profile int, skips []plan.Skip, name string) *dialect.Error {
	e := &dialect.Error{Status: http.StatusForbidden, Code: dialect.CodeNoCandidate, Param: "model",
		Message: "no provider may serve model " + quote(name) + " for this key"}
	if r, ok := RefusingRule(g, profile, skips); ok {
		e.Code = dialect.Code(r.Code)
		e.Message = cmp.Or(r.Message, "denied by access rule "+quote(r.Name)) + "; " + e.Message
	}
	reasons := make([]string, len(skips))
	for i, sk := range skips {
		reasons[i] = skipReason(g, sk)
	}
	if len(reasons) > 0 {
		e.Message += ": " + strings.Join(reasons, "; ")
	}
	return e
}

// RefusingRule is the access rule whose code a plan left with no candidate
// answers with: the one named by the first skip whose reason is a rule's
// code. False when no rule took a candidate out (the refusal is then
// no_candidate). `pistrac explain` names the code by it too.
func RefusingRule(g *plan.Graph, profile int, skips []plan.Skip) (plan.Rule, bool) {
	for _, sk := range skips {
		if r, ok := g.RuleByCode(profile, sk.Reason); ok {
			return r, true
		}
	}
	return plan.Rule{}, false
}

func skipReason(g *plan.Graph, sk plan.Skip) string {
	prov := g.Providers[sk.Provider]
	where := "provider " + quote(prov.Name)
	if sk.Channel >= 0 && sk.Channel < len(prov.Channels) {
		where += " channel " + quote(prov.Channels[sk.Channel].Name)
	}
	if sk.Translate != plan.TranslateNone {
		where += " translated " + string(sk.Translate)
	}
	out := where + ": " + sk.Reason
	if sk.Missing != 0 {
		out += " " + sk.Missing.String()
	}
	return out
}

// fidelityError names, for every candidate, the capabilities the request
// uses that it would drop and the provenance of that claim, in words and in
// the machine-readable details, so the request can be fixed in one pass.
func fidelityError(g *plan.Graph, d decision, name string) *dialect.Error {
	f := &dialect.Fidelity{Used: d.used, Candidates: make([]dialect.Candidate, 0, len(d.sel.Passed))}
	parts := make([]string, 0, len(d.sel.Passed))
	for _, l := range d.sel.Passed {
		c := describe(g, &d.cands[l.Candidate], d.used)
		f.Candidates = append(f.Candidates, c)
		part := fmt.Sprintf("provider %s channel %s (%s) drops %s, per %s", quote(c.Provider), quote(c.Channel), c.Tier, c.Lost, c.Origin)
		if c.VerifiedBy != "" {
			part += " citing " + c.VerifiedBy
		}
		parts = append(parts, part)
	}
	return &dialect.Error{Status: http.StatusBadRequest, Code: dialect.CodeFidelityLoss, Fidelity: f,
		Message: "every way of serving model " + quote(name) + " would drop a capability this request uses " +
			d.used.String() + ": " + strings.Join(parts, "; ") +
			"; remove those features from the request, or ask for a profile that allows lossy serving"}
}

func quote(s string) string { return strconv.Quote(truncate(s, 200)) }
