package codegen

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// Comments in routing.go are derived from the graph alone: they resolve the
// indexes a reviewer would otherwise look up by hand (which provider a
// candidate is, which profiles share a table, what a plan is for).

// maxNoted bounds how many names one comment lists.
const maxNoted = 6

// maxComment bounds the length of a comment quoting a CEL source.
const maxComment = 100

// annotator computes comments for values of the graph it was built for,
// which bundle.Verify has accepted: every index is in range.
type annotator struct {
	g *plan.Graph
	// planUse names the first (model, route) served by each plan.
	planUse []string
	// tableUse lists the profiles using each table.
	tableUse [][]string
}

func newAnnotator(g *plan.Graph) *annotator {
	a := &annotator{g: g, planUse: make([]string, len(g.Plans)), tableUse: make([][]string, len(g.Tables))}
	for _, p := range g.Profiles {
		a.tableUse[p.Table] = append(a.tableUse[p.Table], p.Name)
	}
	for i := range a.planUse {
		a.planUse[i] = "in no table"
	}
	// Walking backwards, the first use is written last and kept.
	for _, t := range slices.Backward(g.Tables) {
		for _, e := range slices.Backward(t.Entries) {
			a.planUse[e.Plan] = fmt.Sprintf("%s on %s", e.Model, e.Route)
		}
	}
	return a
}

// note returns the comments above and after v, the i-th element of its list
// (-1 for a struct field).
func (a *annotator) note(v reflect.Value, i int) (lead, trail string) {
	switch x := v.Interface().(type) {
	case plan.Provider:
		return fmt.Sprintf("provider %d", i), ""
	case plan.Pool:
		return fmt.Sprintf("pool %d", i), ""
	case plan.Profile:
		return fmt.Sprintf("profile %d", i), ""
	case plan.Budget:
		return a.budget(x, i), ""
	case []plan.Candidate:
		return fmt.Sprintf("candidate list %d", i), ""
	case []plan.Skip:
		return fmt.Sprintf("skip list %d", i), ""
	case plan.Table:
		return fmt.Sprintf("table %d: %s", i, listed("profile", a.tableUse[i])), ""
	case plan.Plan:
		return "", fmt.Sprintf("plan %d: %s", i, a.planUse[i])
	case plan.Candidate: // above: candidate lines are too long to align comments after
		return a.channel(x.Provider, x.Channel), ""
	case plan.Skip:
		return a.channel(x.Provider, x.Channel), ""
	case plan.Key:
		return "", "profile " + a.g.Profiles[x.Profile].Name
	case plan.Rule:
		return "", "when " + a.source(x.Expr)
	case plan.Failover:
		return "", a.failover(x)
	}
	return "", ""
}

func (a *annotator) budget(b plan.Budget, i int) string {
	if b.CostExpr < 0 {
		return fmt.Sprintf("budget %d", i)
	}
	return fmt.Sprintf("budget %d: cost %s", i, a.source(b.CostExpr))
}

// channel names a provider's channel as provider/channel, or the provider
// alone for channel -1.
func (a *annotator) channel(provider, channel int) string {
	p := &a.g.Providers[provider]
	if channel < 0 {
		return p.Name
	}
	return p.Name + "/" + p.Channels[channel].Name
}

// source quotes a CEL expression on one line, shortened if long.
func (a *annotator) source(i int) string {
	s := strings.Join(strings.Fields(a.g.CEL[i].Source), " ")
	if r := []rune(s); len(r) > maxComment {
		s = string(r[:maxComment]) + "..."
	}
	return s
}

func (a *annotator) failover(f plan.Failover) string {
	if len(f.To) == 0 {
		return ""
	}
	to := make([]string, len(f.To))
	for i, p := range f.To {
		to[i] = a.g.Providers[p].Name
	}
	return "to " + strings.Join(to, ", ")
}

// listed renders names as "profiles a, b and 3 more".
func listed(noun string, names []string) string {
	switch len(names) {
	case 0:
		return "no " + noun
	case 1:
		return noun + " " + names[0]
	}
	s := noun + "s " + strings.Join(names[:min(len(names), maxNoted)], ", ")
	if len(names) > maxNoted {
		s += fmt.Sprintf(" and %d more", len(names)-maxNoted)
	}
	return s
}
