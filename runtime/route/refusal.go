package route

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// maxListed bounds how many names an error message lists.
const maxListed = 50

// maxQuoted bounds how much of a client's string a message repeats.
const maxQuoted = 200

// Quote is how a refusal names what the client sent: quoted, and cut
// short when long.
func Quote(s string) string {
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "..."
	}
	return strconv.Quote(s)
}

// modelError explains why q has no plan: the catalog does not serve the
// name at all (404), the profile may use it but not on this route (404,
// naming the routes it answers on, which the graph carries), or the
// profile may not use it (403). Each message lists what the key may use on
// this route.
func modelError(g *plan.Graph, q Query) *dialect.Error {
	e := &dialect.Error{Param: "model"}
	routes := g.RoutesOf(q.Profile, q.Model)
	switch {
	case !g.Known(q.Model):
		e.Status, e.Code = http.StatusNotFound, dialect.CodeModelNotFound
		e.Message = "model " + Quote(q.Model) + " does not exist"
	case len(routes) > 0:
		e.Status, e.Code = http.StatusNotFound, dialect.CodeModelNotOnRoute
		paths := make([]string, len(routes))
		for i, r := range routes {
			paths[i] = "/v1/" + routePath(r)
		}
		e.Message = "model " + Quote(q.Model) + " is not served on /v1/" + routePath(q.Route) +
			"; it answers on " + strings.Join(paths, ", ")
	default:
		e.Status, e.Code = http.StatusForbidden, dialect.CodeModelNotAllowed
		e.Message = "model " + Quote(q.Model) + " is not allowed for this key"
	}
	e.Message += "; " + available(g.Listed(q.Profile, q.Route))
	return e
}

// NotListed refuses a model name that is not among names, the models a key
// may use, listing them.
func NotListed(name string, names []string) *dialect.Error {
	return &dialect.Error{Status: http.StatusNotFound, Code: dialect.CodeModelNotFound, Param: "model",
		Message: "model " + Quote(name) + " is not available to this key; " + available(names)}
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
func noCandidateError(g *plan.Graph, q Query, skips []plan.Skip) *dialect.Error {
	e := &dialect.Error{Status: http.StatusForbidden, Code: dialect.CodeNoCandidate, Param: "model",
		Message: "no provider may serve model " + Quote(q.Model) + " for this key"}
	if r, ok := refusingRule(g, q.Profile, skips); ok {
		e.Code = dialect.Code(r.Code)
		e.Message = cmp.Or(r.Message, "denied by access rule "+Quote(r.Name)) + "; " + e.Message
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

// refusingRule is the access rule whose code a plan left with no
// candidate answers with: the one named by the first skip whose reason is
// a rule's code. False when no rule took a candidate out (the refusal is
// then no_candidate).
func refusingRule(g *plan.Graph, profile int, skips []plan.Skip) (plan.Rule, bool) {
	for _, sk := range skips {
		if r, ok := g.RuleByCode(profile, sk.Reason); ok {
			return r, true
		}
	}
	return plan.Rule{}, false
}

func skipReason(g *plan.Graph, sk plan.Skip) string {
	prov := g.Providers[sk.Provider]
	where := "provider " + Quote(prov.Name)
	if sk.Channel >= 0 && sk.Channel < len(prov.Channels) {
		where += " channel " + Quote(prov.Channels[sk.Channel].Name)
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
func fidelityError(g *plan.Graph, d *Decision, name string) *dialect.Error {
	passed := d.Selection.Passed
	f := &dialect.Fidelity{Used: d.Used, Candidates: make([]dialect.Candidate, 0, len(passed))}
	parts := make([]string, 0, len(passed))
	for _, l := range passed {
		c := describe(g, &d.Candidates[l.Candidate], d.Used)
		f.Candidates = append(f.Candidates, c)
		part := fmt.Sprintf("provider %s channel %s (%s) drops %s, per %s", Quote(c.Provider), Quote(c.Channel), c.Tier, c.Lost, c.Origin)
		if c.VerifiedBy != "" {
			part += " citing " + c.VerifiedBy
		}
		parts = append(parts, part)
	}
	return &dialect.Error{Status: http.StatusBadRequest, Code: dialect.CodeFidelityLoss, Fidelity: f,
		Message: "every way of serving model " + Quote(name) + " would drop a capability this request uses " +
			d.Used.String() + ": " + strings.Join(parts, "; ") +
			"; remove those features from the request, or ask for a profile that allows lossy serving"}
}

// describe names candidate c for a client, with what it would drop of the
// capabilities the request uses and the provenance of its channel's claim.
func describe(g *plan.Graph, c *plan.Candidate, used plan.CapSet) dialect.Candidate {
	prov := &g.Providers[c.Provider]
	ch := &prov.Channels[c.Channel]
	d := dialect.Candidate{
		Provider: prov.Name, Channel: ch.Name, Tier: c.Tier, Model: c.Model, Translate: c.Translate,
		Lost: used &^ c.Preserves, Origin: c.Origin, VerifiedAt: ch.VerifiedAt, VerifiedBy: ch.VerifiedBy,
	}
	if c.Translate != plan.TranslateNone {
		// The claim is the translator's, not the native channel's it rides.
		d.VerifiedAt, d.VerifiedBy = "", translate.Claim(c.Translate)
	}
	d.Pool = Members(g, c)
	return d
}
