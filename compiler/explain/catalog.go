package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/catalog"
	"github.com/pistra/pistra/runtime/plan"
)

// Catalog writes the catalog report as an aligned text table (format
// "text" or "") or as a JSON array of catalog.Row ("json"). The text form
// also names declared channels that no plan can reach.
func Catalog(w io.Writer, g *plan.Graph, now time.Time, format string) error {
	rows := catalog.Rows(g, now)
	switch format {
	case "json":
		if rows == nil {
			rows = []catalog.Row{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "", "text":
		return catalogText(w, g, rows)
	}
	return fmt.Errorf("unknown catalog format %q (formats: text, json)", format)
}

func catalogText(w io.Writer, g *plan.Graph, rows []catalog.Row) error {
	p := &printer{w: w}
	tw := p.table()
	row(tw, "", "provider", "channel", "dialect", "tier", "models", "routes", "preserves", "origin", "verified_at", "age", "verified_by")
	for _, r := range rows {
		age := "-"
		if r.AgeDays != nil {
			age = strconv.Itoa(*r.AgeDays) + "d"
		}
		gate := "all"
		if len(r.ModelGate) > 0 {
			gate = strings.Join(r.ModelGate, ",")
		}
		row(tw, "", r.Provider, r.Channel, string(r.Dialect), string(r.Tier), gate,
			strings.Join(routeNames(r.Routes), ","), capsText(r.Preserves), orDash(r.Origin),
			orDash(r.VerifiedAt), age, orDash(r.VerifiedBy))
	}
	tw.Flush()
	writeModelRoutes(p, g)
	if idle := catalog.Unroutable(g); len(idle) > 0 {
		p.printf("\nnot routable by any plan: %s\n", strings.Join(idle, ", "))
	}
	return p.err
}

// writeModelRoutes lists every public name with the routes some profile
// is served it on, so a single-route model (embeddings, legacy
// completions) shows where it answers and where the gateway refuses it.
func writeModelRoutes(p *printer, g *plan.Graph) {
	routes := map[string][]plan.Route{}
	for _, t := range g.Tables {
		for _, e := range t.Entries {
			if g.Plans[e.Plan].Listed && !slices.Contains(routes[e.Model], e.Route) {
				routes[e.Model] = append(routes[e.Model], e.Route)
			}
		}
	}
	p.printf("\nmodels and the routes they answer on (any profile):\n")
	tw := p.table()
	row(tw, "  ", "model", "routes")
	for _, name := range g.Names {
		rs := routes[name]
		slices.SortFunc(rs, func(a, b plan.Route) int { return slices.Index(plan.Routes, a) - slices.Index(plan.Routes, b) })
		text := "none (no profile is served it)"
		if len(rs) > 0 {
			text = strings.Join(routeNames(rs), ",")
		}
		row(tw, "  ", name, text)
	}
	tw.Flush()
}
