package explain

import (
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/route"
)

// writeSelection prints the selection of decision d, pistrad's for a
// request using the capabilities asked.
func writeSelection(p *printer, g *plan.Graph, d *route.Decision, asked plan.CapSet) {
	usedText := "no capabilities"
	if asked != 0 {
		usedText = strings.Join(asked.Names(), ",")
	}
	onLoss := g.LossAction(d.Query.Profile)
	p.printf("\nselection for a request using %s (on_fidelity_loss: %s):\n", usedText, orDash(string(onLoss)))
	cands, sel, used := d.Candidates, &d.Selection, d.Used
	if len(cands) == 0 {
		p.printf("  nothing to select: the plan has no candidates\n")
		return
	}
	if asked != 0 && !d.Read {
		// pistrad would not ask, so nothing it uses can be passed over.
		p.printf("  the body would not be read for capabilities: no candidate here can drop one pistrad detects on this route\n")
	}
	switch {
	case sel.Rejected:
		p.printf("  rejected: every candidate would lose a capability the request uses\n")
	case sel.Lossy:
		p.printf("  forwarded with loss: no candidate keeps every capability the request uses, and policy allows the best\n")
	}
	tw := p.table()
	for i, c := range sel.Attempt {
		label := "then"
		if i == 0 {
			label = "serves"
		}
		lost := ""
		if sel.Lossy {
			lost = "losing " + capsText(used&^cands[c].Preserves)
		}
		attemptRow(tw, g, cands, c, label, lost)
	}
	for _, l := range sel.Passed {
		label := "passed over"
		if sel.Rejected {
			label = "refused"
		}
		attemptRow(tw, g, cands, l.Candidate, label, "would lose "+capsText(l.Missing)+"; claim: "+claimSource(g, &cands[l.Candidate]))
	}
	tw.Flush()
}

func attemptRow(tw *tabwriter.Writer, g *plan.Graph, cands []plan.Candidate, i int, label, note string) {
	c := &cands[i]
	cells := []string{label, "#" + strconv.Itoa(i), candidateName(g, c), string(c.Tier), c.Model}
	if note != "" {
		cells = append(cells, note)
	}
	row(tw, "  ", cells...)
}
