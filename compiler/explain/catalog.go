package explain

import (
	"encoding/json"
	"fmt"
	"io"
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
	if idle := catalog.Unroutable(g); len(idle) > 0 {
		p.printf("\nnot routable by any plan: %s\n", strings.Join(idle, ", "))
	}
	return p.err
}
