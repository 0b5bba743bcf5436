package route

import (
	"time"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// preflightNote is what every preflight answer says about itself.
const preflightNote = "no upstream call was made: this answers routing and fidelity only " +
	"(which candidate would serve and what it would drop, past suspended providers and open circuits, and with suspended access rules lifted), " +
	"not availability, budgets or output"

// Answer is the body of a successful preflight: what a request would be
// served by, and what was passed over on the way.
type Answer struct {
	Performed bool       `json:"performed"`
	Note      string     `json:"note"`
	Route     plan.Route `json:"route"`
	Model     string     `json:"model"`
	Profile   string     `json:"profile"`
	// Key is the key an admin preflight acted for.
	Key            string          `json:"key,omitempty"`
	RequireCaps    plan.CapSet     `json:"require_caps"`
	OnFidelityLoss plan.LossAction `json:"on_fidelity_loss"`
	Capabilities   CapsRead        `json:"capabilities"`
	// Serve is the first candidate the attempt loop would try; Lossy says
	// it was allowed despite dropping Serve.Lost.
	Serve        dialect.Candidate   `json:"serve"`
	Lossy        bool                `json:"lossy"`
	AttemptOrder []dialect.Candidate `json:"attempt_order"`
	// PassedOver are candidates selection set aside for a lossless one.
	PassedOver []dialect.Candidate `json:"passed_over"`
	// Skipped are candidates the policy ruled out, at build time or by the
	// key's access rules, then those the attempt loop would pass over now.
	Skipped []Skipped `json:"skipped"`
	// SuspendedRules are the access rules the decision did not apply
	// because they are suspended, each with the candidates it kept that
	// the rule denies.
	SuspendedRules []SuspendedRule `json:"suspended_rules"`
}

// SuspendedRule is an access rule a decision skipped, suspended.
type SuspendedRule struct {
	Name string `json:"name"`
	Code string `json:"code"`
	// Profile is the profile whose own rule it is; empty for a
	// deployment-wide rule.
	Profile string `json:"profile,omitempty"`
	// Static is true for a rule the build folded into the plans.
	Static bool `json:"static"`
	// WouldDeny are the candidates kept that the rule denies, with its
	// code as their reason.
	WouldDeny []Skipped `json:"would_deny"`
}

// CapsRead says whether the body was read for capabilities (it is not when
// no candidate could drop anything readable) and what it uses.
type CapsRead struct {
	Read bool        `json:"read"`
	Used plan.CapSet `json:"used"`
}

// Skipped is a candidate a preflight names as not tried, and why.
type Skipped struct {
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

// NewAnswer is what decision d says of a preflight, on behalf of the key
// named key ("" for the caller's own): everything but the attempt order
// and what the attempt loop's own checks pass over, which the caller adds
// with Attempt and PassOver before Finish.
func NewAnswer(g *plan.Graph, key string, d *Decision) Answer {
	q := &d.Query
	a := Answer{
		Note: preflightNote, Route: q.Route, Model: q.Model, Profile: g.Profiles[q.Profile].Name, Key: key,
		RequireCaps: g.Profiles[q.Profile].RequireCaps, OnFidelityLoss: g.LossAction(q.Profile),
		Capabilities: CapsRead{Read: d.Read, Used: d.Used}, Lossy: d.Selection.Lossy,
		AttemptOrder: make([]dialect.Candidate, 0, len(d.Selection.Attempt)),
		PassedOver:   make([]dialect.Candidate, 0, len(d.Selection.Passed)),
		Skipped:      make([]Skipped, 0, len(d.Skips)),
	}
	for _, l := range d.Selection.Passed {
		a.PassedOver = append(a.PassedOver, describe(g, &d.Candidates[l.Candidate], d.Used))
	}
	for _, sk := range d.Skips {
		a.Skipped = append(a.Skipped, skipped(g, sk))
	}
	a.SuspendedRules = suspendedRules(g, d)
	return a
}

func skipped(g *plan.Graph, sk plan.Skip) Skipped {
	prov := &g.Providers[sk.Provider]
	s := Skipped{Provider: prov.Name, Model: sk.Model, Reason: sk.Reason, Missing: sk.Missing, Translate: sk.Translate}
	if sk.Channel >= 0 && sk.Channel < len(prov.Channels) {
		s.Channel = prov.Channels[sk.Channel].Name
	}
	return s
}

// suspendedRules groups d.Lifted by rule, in the order the rules are
// written.
func suspendedRules(g *plan.Graph, d *Decision) []SuspendedRule {
	out := []SuspendedRule{}
	var all plan.RuleSet
	for _, l := range d.Lifted {
		all |= l.Rules
	}
	profile := d.Query.Profile
	for ; all != 0; all &= all - 1 {
		i := all.First()
		r := g.ProfileRule(profile, i)
		sr := SuspendedRule{Name: r.Name, Code: r.Code, Static: r.Static}
		if i >= len(g.Rules) {
			sr.Profile = g.Profiles[profile].Name
		}
		for _, l := range d.Lifted {
			if l.Rules&(1<<i) != 0 {
				l.Reason = r.Code
				sr.WouldDeny = append(sr.WouldDeny, skipped(g, l))
			}
		}
		out = append(out, sr)
	}
	return out
}

// Attempt adds c, which the attempt loop would try, to the attempt order.
func (a *Answer) Attempt(g *plan.Graph, c *plan.Candidate, used plan.CapSet) {
	a.AttemptOrder = append(a.AttemptOrder, describe(g, c, used))
}

// PassOver adds c, which the attempt loop would pass over now for reason,
// admissible again after retryAfter, to the skips.
func (a *Answer) PassOver(g *plan.Graph, c *plan.Candidate, reason string, retryAfter time.Duration) {
	prov := &g.Providers[c.Provider]
	a.Skipped = append(a.Skipped, Skipped{Provider: prov.Name, Channel: prov.Channels[c.Channel].Name, Model: c.Model,
		Reason: reason, RetryAfterMS: retryAfter.Milliseconds()})
}

// Finish sets what would serve: the first of the attempt order. False
// when the attempt loop would try nothing, and the request is refused.
func (a *Answer) Finish() bool {
	if len(a.AttemptOrder) == 0 {
		return false
	}
	a.Serve = a.AttemptOrder[0]
	return true
}
