package explain

import (
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pistra/pistra/runtime/plan"
)

// writeSelection runs plan.Select exactly as pistrad would for a request
// using the given capabilities, and prints its decision.
func writeSelection(p *printer, g *plan.Graph, cands []plan.Candidate, used plan.CapSet, onLoss plan.LossAction) {
	usedText := "no capabilities"
	if used != 0 {
		usedText = strings.Join(used.Names(), ",")
	}
	p.printf("\nselection for a request using %s (on_fidelity_loss: %s):\n", usedText, orDash(string(onLoss)))
	if len(cands) == 0 {
		p.printf("  nothing to select: the plan has no candidates\n")
		return
	}
	sel := plan.Select(cands, used, onLoss, nil)
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
