package graph

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// Plan pictures: candidates as boxes in attempt order, perRow to a row,
// joined by the edge the attempt loop takes from one to the next.
const (
	boxW, boxH = 250, 54
	gapX, gapY = 56, 34
	perRow     = 4
	pad        = 8
	boxChars   = 38 // characters of text a box's width holds
)

// svg accumulates one picture's elements; every text it writes is escaped.
type svg struct {
	b  strings.Builder
	id string // the picture's marker id, unique in the page
}

func (s *svg) printf(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// text writes one line of escaped text, cut to what a box holds (the
// whole of it is in the box's title).
func (s *svg) text(x, y int, class, t string) {
	if r := []rune(t); len(r) > boxChars {
		t = string(r[:boxChars-1]) + "…"
	}
	s.printf(`<text x="%d" y="%d" class="%s">%s</text>`, x, y, class, esc(t))
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// open starts a picture of w×h with the arrow head its edges use.
func (s *svg) open(w, h int, label string) {
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, w, h, w, h, esc(label))
	s.printf(`<defs><marker id="%s" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L8,4L0,8z"/></marker></defs>`, s.id)
}

func (s *svg) close() string {
	s.b.WriteString(`</svg>`)
	return s.b.String()
}

// planSVG draws a plan's candidates (views carries their names and marks,
// in the same order) and the edges between them: the next channel of the
// same provider, or a failover to the next provider, with the failure
// classes that take it.
func planSVG(g *plan.Graph, p *plan.Plan, id string, views []itemView) string {
	cands := g.CandidatesOf(p)
	s := svg{id: "a-" + id}
	if len(cands) == 0 {
		s.open(2*boxW, 30, "no candidates")
		s.printf(`<text x="%d" y="20" class="none">no candidates: every request is refused</text>`, pad)
		return s.close()
	}
	cols := min(len(cands), perRow)
	rows := (len(cands) + perRow - 1) / perRow
	s.open(2*pad+cols*boxW+(cols-1)*gapX, 2*pad+rows*boxH+(rows-1)*gapY, "candidates in attempt order")
	pos := func(i int) (int, int) { return pad + (i%perRow)*(boxW+gapX), pad + (i/perRow)*(boxH+gapY) }
	for i := 1; i < len(cands); i++ {
		edge(&s, g, &cands[i-1], &cands[i], i, pos)
	}
	for i := range cands {
		c := &cands[i]
		x, y := pos(i)
		class := "cand " + string(c.Tier)
		if views[i].Mark != "" {
			class += " " + views[i].Mark
		}
		s.printf(`<g class="%s" data-name="%s"><title>%s</title>`, class, esc(views[i].Name), esc(views[i].Name+": "+views[i].Text))
		s.printf(`<rect x="%d" y="%d" width="%d" height="%d" rx="5"/>`, x, y, boxW, boxH)
		s.text(x+8, y+17, "name", fmt.Sprintf("%d %s", i, views[i].Name))
		line := string(c.Tier) + " · " + c.Model
		if c.Translate != plan.TranslateNone {
			line += " · via " + string(c.Translate)
		}
		s.text(x+8, y+33, "sub", line)
		role := "primary"
		if !c.Primary {
			role = "failover"
		}
		s.text(x+8, y+48, "sub", role+" · preserves "+views[i].Preserves)
		s.b.WriteString(`</g>`)
	}
	return s.close()
}

// edge draws the step from candidate a to b (at index i).
func edge(s *svg, g *plan.Graph, a, b *plan.Candidate, i int, pos func(int) (int, int)) {
	ax, ay := pos(i - 1)
	bx, by := pos(i)
	class, label := "next", "next channel"
	if a.Provider != b.Provider {
		class, label = "failover", "failover"
		if on := plan.Names(g.Providers[a.Provider].Failover.On); len(on) > 0 {
			label += " on " + strings.Join(on, ",")
		}
	}
	var x1, y1, x2, y2 int
	if ay == by { // same row: side to side
		x1, y1, x2, y2 = ax+boxW, ay+boxH/2, bx, by+boxH/2
	} else { // wrapped: from the bottom of a to the top of b
		x1, y1, x2, y2 = ax+boxW/2, ay+boxH, bx+boxW/2, by
	}
	s.printf(`<g class="edge %s" data-from="%d" data-to="%d"><title>%s</title>`, class, i-1, i, esc(label))
	s.printf(`<line x1="%d" y1="%d" x2="%d" y2="%d" marker-end="url(#%s)"/>`, x1, y1, x2, y2, s.id)
	if ay == by {
		s.text((x1+x2)/2-gapX/2+2, y1-5, "elabel", shortLabel(class))
	}
	s.b.WriteString(`</g>`)
}

func shortLabel(class string) string {
	if class == "failover" {
		return "failover"
	}
	return "next"
}

// Failover overview: providers one per line, each failover edge an arc
// on the right from the provider to where it fails over, numbered in the
// provider's order.
const (
	lineH  = 22
	nodeW  = 240
	arcPad = 18
)

func failoverSVG(g *plan.Graph) string {
	s := svg{id: "a-failover"}
	n := len(g.Providers)
	widest := 0
	for i := range g.Providers {
		for _, j := range g.Providers[i].Failover.To {
			widest = max(widest, abs(i-j))
		}
	}
	w := pad + nodeW + arcPad + widest*6 + 40
	s.open(w, 2*pad+n*lineH, "providers and their failover edges")
	mid := func(i int) int { return pad + i*lineH + lineH/2 }
	for i := range g.Providers {
		p := &g.Providers[i]
		for k, j := range p.Failover.To {
			x := pad + nodeW
			bend := x + arcPad + abs(i-j)*6
			label := fmt.Sprintf("%s fails over to %s (%d), on %s", p.Name, g.Providers[j].Name, k+1, orNone(strings.Join(plan.Names(p.Failover.On), ",")))
			s.printf(`<g class="edge failover" data-from="%s" data-to="%s"><title>%s</title>`, esc(p.Name), esc(g.Providers[j].Name), esc(label))
			s.printf(`<path d="M%d,%d C%d,%d %d,%d %d,%d" fill="none" marker-end="url(#%s)"/></g>`, x, mid(i)-3, bend, mid(i)-3, bend, mid(j)+3, x, mid(j)+3, s.id)
		}
	}
	for i := range g.Providers {
		p := &g.Providers[i]
		s.printf(`<g class="provider" data-name="%s"><rect x="%d" y="%d" width="%d" height="%d" rx="4"/>`, esc(p.Name), pad, pad+i*lineH+2, nodeW, lineH-4)
		s.text(pad+6, mid(i)+4, "name", fmt.Sprintf("%s (%d channels)", p.Name, len(p.Channels)))
		s.b.WriteString(`</g>`)
	}
	return s.close()
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
