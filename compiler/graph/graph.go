// Package graph renders a compiled decision graph as one self-contained
// HTML page for reviewers: per profile, every plan's candidates in attempt
// order (an inline SVG with the failover edges), its skips with their
// reasons and the file:line that causes them, the budgets and access rules
// that apply, and, against a base graph, what changed. The walk over plans
// and the comparison are package explain's, so the page and `pistrac
// explain`/`diff` never disagree. Output is deterministic: the same graph
// gives the same bytes.
package graph

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/pistra/pistra/compiler/explain"
	"github.com/pistra/pistra/runtime/plan"
)

// Options says what the page is compared with and how it is placed.
type Options struct {
	// Title heads the page ("" for the graph's source hash).
	Title string
	// Positions places items, budgets and rules in the policy; nil for a
	// bundle, which keeps none.
	Positions explain.Positions
	// Base, when set, is the graph the page marks changes against.
	Base *plan.Graph
}

// The marks a plan, a (route, name) or an item carries against a base.
const (
	markAdded    = "added"
	markModified = "modified"
	markRemoved  = "removed"
)

// Render writes the page for g.
func Render(w io.Writer, g *plan.Graph, opt Options) error {
	p := build(g, opt)
	if err := pageTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("rendering the graph page: %w", err)
	}
	return nil
}

// page is what the template reads.
type page struct {
	Title, SourceHash, Digest string
	Plans, Providers          int
	Diffed                    bool
	Added, Removed, Modified  int
	RemovedRefs               []string
	Failover                  template.HTML
	Profiles                  []profileView
}

type profileView struct {
	Name, AllowedModels, RequireCaps, PoolSubset, LossAction string
	Budgets                                                  []settingView
	Rules                                                    []settingView
	Plans                                                    []planView
}

// settingView is one budget or access rule that applies to a profile.
type settingView struct{ Name, Text, At string }

type planView struct {
	ID, Profile string
	Mark        string
	Summary     string
	Refs        []refView
	SVG         template.HTML
	Candidates  []itemView
	Skips       []itemView
	Gone        []string // items the base had and this plan has not
	Changes     []string // Diff's lines for the plan's (route, name)s
}

type refView struct{ Text, Mark string }

type itemView struct {
	Name, Text, At, Mark string
	// Preserves is the candidate's capabilities as the reports word them.
	Preserves string
}

func build(g *plan.Graph, opt Options) page {
	p := page{Title: opt.Title, SourceHash: g.SourceHash, Digest: g.Digest, Providers: len(g.Providers),
		Failover: template.HTML(failoverSVG(g))}
	if p.Title == "" {
		p.Title = "pistra decision graph " + short(g.SourceHash)
	}
	deltas := map[explain.PlanRef]explain.PlanDelta{}
	if opt.Base != nil {
		p.Diffed = true
		for _, d := range explain.Deltas(opt.Base, g) {
			switch d.Op {
			case explain.Added:
				p.Added++
			case explain.Removed:
				p.Removed++
				p.RemovedRefs = append(p.RemovedRefs, refText(d.Ref))
			case explain.Modified:
				p.Modified++
			}
			deltas[d.Ref] = d
		}
	}
	views := explain.Walk(g, opt.Positions)
	p.Plans = len(views)
	for i := range g.Profiles {
		pv := profileOf(g, i, opt.Positions)
		for j := range views {
			if views[j].Profile == pv.Name {
				pv.Plans = append(pv.Plans, planOf(g, &views[j], len(pv.Plans), deltas))
			}
		}
		p.Profiles = append(p.Profiles, pv)
	}
	return p
}

func profileOf(g *plan.Graph, i int, pos explain.Positions) profileView {
	prof := &g.Profiles[i]
	pv := profileView{Name: prof.Name, AllowedModels: orAll(strings.Join(prof.AllowedModels, ", ")),
		RequireCaps: orNone(strings.Join(prof.RequireCaps.Names(), ", ")), PoolSubset: orNone(prof.PoolSubset),
		LossAction: string(g.LossAction(i))}
	for _, b := range prof.Budgets {
		bu := &g.Budgets[b]
		cost := string(bu.CostType)
		if bu.CostExpr >= 0 && bu.CostExpr < len(g.CEL) {
			cost += " " + g.CEL[bu.CostExpr].Source
		}
		text := fmt.Sprintf("%d per %s", bu.Limit, bu.Window)
		if bu.Per != "" {
			text += " per " + string(bu.Per)
		}
		pv.Budgets = append(pv.Budgets, settingView{bu.Name, text + ", cost " + cost, at(pos, "budgets", explain.Named(bu.Name))})
	}
	for j := range len(g.Rules) + len(prof.Rules) {
		r := g.ProfileRule(i, j)
		of, where := "deployment", []any{"access_rules", explain.Named(r.Name)}
		if j >= len(g.Rules) {
			of, where = "profile", []any{"profiles", prof.Name, "access_rules", explain.Named(r.Name)}
		}
		decided := "per request"
		if r.Static {
			decided = "at build"
		}
		when := ""
		if r.Expr >= 0 && r.Expr < len(g.CEL) {
			when = g.CEL[r.Expr].Source
		}
		pv.Rules = append(pv.Rules, settingView{r.Name, fmt.Sprintf("%s rule, code %s, decided %s: %s", of, r.Code, decided, when), at(pos, where...)})
	}
	return pv
}

func planOf(g *plan.Graph, v *explain.PlanView, n int, deltas map[explain.PlanRef]explain.PlanDelta) planView {
	pv := planView{ID: "p-" + v.Profile + "-" + strconv.Itoa(n), Profile: v.Profile}
	itemMarks := map[string]string{}
	seen := map[string]bool{}
	changed := false
	for _, ref := range v.Refs {
		d, ok := deltas[ref]
		r := refView{Text: string(ref.Route) + " " + ref.Model}
		if ok {
			changed = true
			r.Mark = markOf(d.Op)
			for _, c := range d.Changes {
				noteChange(&pv, c, itemMarks, seen)
			}
		}
		pv.Refs = append(pv.Refs, r)
	}
	if changed {
		pv.Mark = markModified
		if allAdded(v.Refs, deltas) {
			pv.Mark = markAdded
		}
	}
	pv.Candidates = itemViews(v.Candidates, "candidate", itemMarks)
	pv.Skips = itemViews(v.Skips, "skip", itemMarks)
	pv.Summary = fmt.Sprintf("%d candidates, %d skipped", len(v.Candidates), len(v.Skips))
	if len(v.Candidates) > 0 { // native only says nothing of an empty plan
		pv.Summary += fmt.Sprintf(", native only: %s", yesNo(v.NativeOnly))
	}
	pv.Summary += ", listed in /v1/models: " + yesNo(v.Listed)
	pv.SVG = template.HTML(planSVG(g, &g.Plans[v.Plan], pv.ID, pv.Candidates))
	return pv
}

// noteChange files one change of a plan's (route, name) under the item it
// marks, once however many of the plan's names it applies to.
func noteChange(pv *planView, c explain.Change, marks map[string]string, seen map[string]bool) {
	if !seen[c.Text] {
		seen[c.Text] = true
		pv.Changes = append(pv.Changes, c.Text)
	}
	key := c.Kind + " " + c.Item
	switch {
	case c.Kind == "":
	case c.Op == explain.Removed:
		if !seen[key] {
			seen[key] = true
			pv.Gone = append(pv.Gone, key)
		}
	case marks[key] != markAdded:
		marks[key] = markOf(c.Op)
	}
}

func allAdded(refs []explain.PlanRef, deltas map[explain.PlanRef]explain.PlanDelta) bool {
	for _, r := range refs {
		if d, ok := deltas[r]; !ok || d.Op != explain.Added {
			return false
		}
	}
	return true
}

func itemViews(items []explain.Item, kind string, marks map[string]string) []itemView {
	out := make([]itemView, len(items))
	for i, it := range items {
		var fs []string
		out[i] = itemView{Name: it.Name, At: it.At, Mark: marks[kind+" "+it.Name]}
		for _, f := range it.Fields {
			if f.Value != "" {
				fs = append(fs, f.Name+" "+f.Value)
			}
			if f.Name == "preserves" {
				out[i].Preserves = f.Value
			}
		}
		out[i].Text = strings.Join(fs, "; ")
	}
	return out
}

func markOf(op explain.Op) string {
	switch op {
	case explain.Added:
		return markAdded
	case explain.Removed:
		return markRemoved
	}
	return markModified
}

func refText(r explain.PlanRef) string { return r.Profile + " " + string(r.Route) + " " + r.Model }

func at(pos explain.Positions, path ...any) string {
	if pos == nil {
		return ""
	}
	return pos.Pos(path...)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orAll(s string) string {
	if s == "" {
		return "all"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
