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

// CatalogReport is the JSON form of the catalog: every routable channel,
// every public name with the routes it answers on, and the declared
// channels no plan can reach, as the text form has them.
type CatalogReport struct {
	Channels   []catalog.Row `json:"channels"`
	Models     []ModelRoutes `json:"models"`
	Unroutable []string      `json:"unroutable"`
}

// ModelRoutes is a public name and the routes some profile is served it
// on, in plan.Routes order; none when no profile is.
type ModelRoutes struct {
	Model  string       `json:"model"`
	Routes []plan.Route `json:"routes"`
}

// Catalog writes the catalog report as an aligned text table (format
// "text" or "") or as a CatalogReport in JSON ("json").
func Catalog(w io.Writer, g *plan.Graph, now time.Time, format string) error {
	rows := catalog.Rows(g, now)
	switch format {
	case "json":
		rep := CatalogReport{Channels: rows, Models: modelRoutes(g), Unroutable: catalog.Unroutable(g)}
		if rep.Channels == nil {
			rep.Channels = []catalog.Row{}
		}
		if rep.Unroutable == nil {
			rep.Unroutable = []string{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
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
		age := ageText(r.AgeDays)
		gate := "all"
		if len(r.ModelGate) > 0 {
			gate = strings.Join(r.ModelGate, ",")
		}
		row(tw, "", r.Provider, r.Channel, string(r.Dialect), string(r.Tier), gate,
			strings.Join(routeNames(r.Routes), ","), capsText(r.Preserves), orDash(r.Origin),
			orDash(r.VerifiedAt), age, orDash(r.VerifiedBy))
	}
	tw.Flush()
	writeOverridden(p, rows)
	writeModelRoutes(p, g)
	if idle := catalog.Unroutable(g); len(idle) > 0 {
		p.printf("\nnot routable by any plan: %s\n", strings.Join(idle, ", "))
	}
	return p.err
}

// ageText is a claim's age as the tables print it.
func ageText(days *int) string {
	switch {
	case days == nil:
		return "-"
	case *days < 0:
		return "in the future" // a mistyped date, most likely
	}
	return strconv.Itoa(*days) + "d"
}

// writeOverridden lists, under each channel whose claim won over others,
// the claims it overrode, the next in line first.
func writeOverridden(p *printer, rows []catalog.Row) {
	for _, r := range rows {
		if len(r.Overrode) == 0 {
			continue
		}
		p.printf("\n%s/%s: the claim of %s (verified_at %s) overrode:\n", r.Provider, r.Channel, r.Origin, r.VerifiedAt)
		tw := p.table()
		row(tw, "  ", "origin", "verified_at", "age", "preserves", "verified_by")
		for _, o := range r.Overrode {
			row(tw, "  ", o.Origin, o.VerifiedAt, ageText(o.AgeDays), capsText(o.Preserves), o.VerifiedBy)
		}
		tw.Flush()
	}
}

// writeModelRoutes lists every public name with the routes some profile
// is served it on, so a single-route model (embeddings, legacy
// completions) shows where it answers and where the gateway refuses it.
func writeModelRoutes(p *printer, g *plan.Graph) {
	p.printf("\nmodels and the routes they answer on (any profile):\n")
	tw := p.table()
	row(tw, "  ", "model", "routes")
	for _, m := range modelRoutes(g) {
		text := "none (no profile is served it)"
		if len(m.Routes) > 0 {
			text = strings.Join(routeNames(m.Routes), ",")
		}
		row(tw, "  ", m.Model, text)
	}
	tw.Flush()
}

// modelRoutes is every public name of g with the routes a listed plan
// serves it on, for any profile.
func modelRoutes(g *plan.Graph) []ModelRoutes {
	routes := map[string][]plan.Route{}
	for _, t := range g.Tables {
		for _, e := range t.Entries {
			if g.Plans[e.Plan].Listed && !slices.Contains(routes[e.Model], e.Route) {
				routes[e.Model] = append(routes[e.Model], e.Route)
			}
		}
	}
	out := make([]ModelRoutes, len(g.Names))
	for i, name := range g.Names {
		rs := routes[name]
		slices.SortFunc(rs, func(a, b plan.Route) int { return slices.Index(plan.Routes, a) - slices.Index(plan.Routes, b) })
		if rs == nil {
			rs = []plan.Route{}
		}
		out[i] = ModelRoutes{Model: name, Routes: rs}
	}
	return out
}
