package explain

import (
	"fmt"
	"io"
	"strconv"

	"github.com/pistra/pistra/runtime/plan"
)

// Plan prints the plan a query names: its candidates in attempt order, every
// candidate ruled out at build time and why, and what fidelity selection
// (plan.Select, the same function pistrad runs) does for the capabilities in
// q.Caps. A query with no plan is an error naming what would be accepted.
func Plan(w io.Writer, g *plan.Graph, q Query) error {
	r, err := resolve(g, q)
	if err != nil {
		return err
	}
	p := &printer{w: w}
	cands, skips := g.CandidatesOf(r.plan), g.SkipsOf(r.plan)
	writeHeader(p, g, q, r, len(cands), len(skips))
	writeCandidates(p, g, cands)
	writeSkips(p, g, skips)
	writeSelection(p, g, cands, q.Caps, g.LossAction(r.profile))
	return p.err
}

func writeHeader(p *printer, g *plan.Graph, q Query, r resolved, nCands, nSkips int) {
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
	if nCands == 0 {
		// NativeOnly is vacuously true of an empty list; say what it means.
		row(tw, "", "plan:", fmt.Sprintf("no candidates, %d skipped: every request is refused (no_candidate); not listed in /v1/models", nSkips))
	} else {
		row(tw, "", "plan:", fmt.Sprintf("%s, %d skipped; native only: %s; listed in /v1/models: %s",
			count(nCands, "candidate"), nSkips, yesNo(r.plan.NativeOnly), yesNo(r.plan.Listed)))
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

func writeSkips(p *printer, g *plan.Graph, skips []plan.Skip) {
	p.printf("\nskipped at build time:\n")
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
