package explain

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/route"
)

// Plan prints the plan a query names: its candidates in attempt order, every
// candidate ruled out at build time and why, the access rules behind the
// denials (each suspendable), and what fidelity selection does for the
// capabilities in q.Caps, all as pistrad's own decision (package route)
// has them, with the rules in q.Suspend suspended. A query with no plan is
// an error naming what would be accepted.
func Plan(w io.Writer, g *plan.Graph, q Query) error {
	r, err := resolve(g, q)
	if err != nil {
		return err
	}
	suspended, err := suspendedSet(g, r.profile, q.Suspend)
	if err != nil {
		return err
	}
	rules := &route.Rules{} // without a key, only the rules the build folded
	if r.key != "" {
		// The key's rules as pistrad applies them: the candidates they deny
		// follow the build's skips.
		if rules, err = route.LoadRules(g, r.profile, r.key); err != nil {
			return err
		}
	}
	rules.Suspend(suspended)
	d, refusal := route.Decide(g, route.Query{Profile: r.profile, Route: q.Route, Model: q.Model}, route.Fixed(q.Caps), rules, nil)
	if d.Plan == nil {
		return noPlan(g, r.profile, q.Route, q.Model)
	}
	p := &printer{w: w}
	built := buildSkips(g, r.profile, d.Skips)
	writeHeader(p, g, q, r, &d, refusal)
	writeCandidates(p, g, d.Candidates)
	writePools(p, g, d.Candidates)
	writeSkips(p, g, "skipped at build time:", d.Skips[:built])
	if r.key != "" {
		if len(g.RequestRules(r.profile)) > 0 {
			writeSkips(p, g, "denied for key "+r.key+" by the access rules that read the key:", d.Skips[built:])
		}
	} else if rules := g.RequestRules(r.profile); len(rules) > 0 {
		p.printf("\naccess rules that read the key, not applied (give -key to apply them):\n")
		for _, rule := range rules {
			p.printf("  access rule %s (code %s)\n", strconv.Quote(rule.Name), rule.Code)
		}
	}
	writeDenials(p, g, r.profile, d.Skips)
	writeLifted(p, g, r.profile, d.Lifted, q.Suspend)
	writeSelection(p, g, &d, q.Caps)
	return p.err
}

// writeHeader prints whose plan it is and what it holds; refusal is what
// pistrad answers every request of the query with, when it refuses them
// all.
func writeHeader(p *printer, g *plan.Graph, q Query, r resolved, d *route.Decision, refusal *dialect.Error) {
	prof := &g.Profiles[r.profile]
	tw := p.table()
	who := prof.Name
	if r.key != "" {
		who += " (key " + r.key + ")"
	}
	row(tw, "", "profile:", who)
	row(tw, "", "require_caps:", capsText(prof.RequireCaps))
	row(tw, "", "on_fidelity_loss:", string(g.LossAction(r.profile)))
	row(tw, "", "route:", fmt.Sprintf("%s (%s dialect)", q.Route, q.Route.Dialect()))
	row(tw, "", "model:", q.Model)
	nCands, nSkips := len(d.Candidates), len(d.Skips)
	if nCands == 0 {
		// NativeOnly is vacuously true of an empty list; say what it means.
		// The code is the gateway's: a rule's when a rule emptied the plan.
		listed := "not listed in /v1/models"
		if d.Plan.Listed {
			listed = "still listed in /v1/models (the build left it candidates)"
		}
		row(tw, "", "plan:", fmt.Sprintf("no candidates, %d skipped: every request is refused (%s); %s", nSkips, refusal.Code, listed))
	} else {
		row(tw, "", "plan:", fmt.Sprintf("%s, %d skipped; native only: %s; listed in /v1/models: %s",
			count(nCands, "candidate"), nSkips, yesNo(d.Plan.NativeOnly), yesNo(d.Plan.Listed)))
	}
	tw.Flush()
}

func writeCandidates(p *printer, g *plan.Graph, cands []plan.Candidate) {
	p.printf("\ncandidates, in attempt order:\n")
	if len(cands) == 0 {
		p.printf("  none: nothing can serve this plan (see the skips below)\n")
		return
	}
	tw := p.table()
	row(tw, "  ", "#", "provider/channel", "role", "tier", "translate", "upstream model", "preserves", "retries", "timeout", "origin", "verified_at", "verified_by")
	for i := range cands {
		c := &cands[i]
		prov := &g.Providers[c.Provider]
		ch := &prov.Channels[c.Channel]
		row(tw, "  ", strconv.Itoa(i), candidateName(g, c), role(c), string(c.Tier), translation(c),
			c.Model, capsText(c.Preserves), strconv.Itoa(prov.Retry.Max), orDash(millis(prov.TimeoutMS)),
			orDash(c.Origin), orDash(ch.VerifiedAt), orDash(ch.VerifiedBy))
	}
	tw.Flush()
}

// writePools prints, for the candidates sent to a pool's member, the
// member set and how the member is picked, as pistrad dials them
// (route.Members); nothing when no candidate is pooled.
func writePools(p *printer, g *plan.Graph, cands []plan.Candidate) {
	var tw *tabwriter.Writer
	for i := range cands {
		m := route.Members(g, &cands[i])
		if m == nil {
			continue
		}
		if tw == nil {
			p.printf("\npooled candidates, dialled on a member of:\n")
			tw = p.table()
			row(tw, "  ", "#", "pool", "subset", "members (DNS)", "pick", "picker", "picker_failure", "picker_timeout")
		}
		row(tw, "  ", strconv.Itoa(i), m.Name, orDash(m.Subset), m.Members, m.Pick, orDash(m.Picker),
			orDash(string(m.PickerFailure)), orDash(millis(m.PickerTimeoutMS)))
	}
	if tw != nil {
		tw.Flush()
	}
}

func writeSkips(p *printer, g *plan.Graph, heading string, skips []plan.Skip) {
	p.printf("\n%s\n", heading)
	if len(skips) == 0 {
		p.printf("  none\n")
		return
	}
	tw := p.table()
	row(tw, "  ", "provider/channel", "translate", "model", "reason", "missing")
	for _, s := range skips {
		missing := "-"
		if s.Missing != 0 {
			missing = capsText(s.Missing)
		}
		row(tw, "  ", channelName(g, s.Provider, s.Channel), pairText(s.Translate), orDash(s.Model), s.Reason, missing)
	}
	tw.Flush()
}

// candidateName is provider/channel, with the pool subset when the
// candidate is restricted to one.
func candidateName(g *plan.Graph, c *plan.Candidate) string {
	name := channelName(g, c.Provider, c.Channel)
	if c.PoolSubset != "" {
		name += " (subset " + c.PoolSubset + ")"
	}
	return name
}

func role(c *plan.Candidate) string {
	if c.Primary {
		return "primary"
	}
	return "failover"
}

// translation names the dialect pair and the upstream route it lands on.
func translation(c *plan.Candidate) string { return pairText(c.Translate) }

// pairText names a translation pair and the upstream route it lands on,
// "-" for none.
func pairText(t plan.Translation) string {
	if t == plan.TranslateNone {
		return "-"
	}
	return fmt.Sprintf("translated %s -> %s", t, t.Upstream(""))
}
