package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// CatalogRow is one routable channel and the provenance of its capability
// claim. pistrad's admin catalog report serves these rows as JSON.
type CatalogRow struct {
	Provider string       `json:"provider"`
	Channel  string       `json:"channel"`
	Dialect  plan.Dialect `json:"dialect"`
	Tier     plan.Tier    `json:"tier"`
	// ModelGate is empty when the channel accepts every model of its
	// provider.
	ModelGate  []string     `json:"model_gate,omitempty"`
	Routes     []plan.Route `json:"routes"`
	Preserves  plan.CapSet  `json:"preserves"`
	Origin     string       `json:"origin"`
	VerifiedAt string       `json:"verified_at,omitempty"`
	VerifiedBy string       `json:"verified_by,omitempty"`
	// AgeDays is how many days old the claim is; absent when the channel
	// carries no dated claim (native) or the date does not parse.
	AgeDays *int `json:"age_days,omitempty"`
	// Translation is set on a row that describes a translation pair riding
	// the channel: what a client of the other dialect keeps through it
	// (Dialect and Routes are that client's), on the translator's claim.
	Translation plan.Translation `json:"translation,omitempty"`
}

// CatalogRows lists every routable channel (one that some plan uses as a
// candidate, natively or to carry a translation), in the graph's provider
// and channel order, with each claim's age relative to now.
func CatalogRows(g *plan.Graph, now time.Time) []CatalogRow {
	uses := channelUses(g)
	var rows []CatalogRow
	for pi := range g.Providers {
		prov := &g.Providers[pi]
		for ci := range prov.Channels {
			carried, routable := uses[[2]int{pi, ci}]
			if !routable {
				continue
			}
			ch := &prov.Channels[ci]
			rows = append(rows, CatalogRow{
				Provider: prov.Name, Channel: ch.Name, Dialect: ch.Dialect, Tier: ch.Tier,
				ModelGate: ch.ModelGate, Routes: ch.Routes, Preserves: ch.Preserves,
				Origin: ch.Origin, VerifiedAt: ch.VerifiedAt, VerifiedBy: ch.VerifiedBy,
				AgeDays: ageDays(ch.VerifiedAt, now),
			})
			for _, c := range carried {
				in := c.Translate.Inbound()
				rows = append(rows, CatalogRow{
					Provider: prov.Name, Channel: ch.Name, Dialect: in.Dialect(), Tier: plan.TierTranslation,
					ModelGate: ch.ModelGate, Routes: []plan.Route{in}, Preserves: c.Preserves,
					Origin: c.Origin, VerifiedBy: plan.TranslationVerifiedBy, Translation: c.Translate,
				})
			}
		}
	}
	return rows
}

// Catalog writes the catalog report as an aligned text table (format
// "text" or "") or as a JSON array of CatalogRow ("json"). The text form
// also names declared channels that no plan can reach.
func Catalog(w io.Writer, g *plan.Graph, now time.Time, format string) error {
	rows := CatalogRows(g, now)
	switch format {
	case "json":
		if rows == nil {
			rows = []CatalogRow{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "", "text":
		return catalogText(w, g, rows)
	}
	return fmt.Errorf("unknown catalog format %q (formats: text, json)", format)
}

func catalogText(w io.Writer, g *plan.Graph, rows []CatalogRow) error {
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
	if idle := unroutable(g); len(idle) > 0 {
		p.printf("\nnot routable by any plan: %s\n", strings.Join(idle, ", "))
	}
	return p.err
}

// channelUses reads every plan's candidates once. A (provider, channel) is
// a key when some plan has it as a candidate (it is routable); its value
// holds one candidate for each translation pair it carries, in pair order.
func channelUses(g *plan.Graph) map[[2]int][]plan.Candidate {
	uses := map[[2]int][]plan.Candidate{}
	for _, p := range g.Plans {
		for _, c := range g.CandidateLists[p.Candidates] {
			k := [2]int{c.Provider, c.Channel}
			carried := uses[k]
			if c.Translate != plan.TranslateNone && !slices.ContainsFunc(carried, func(x plan.Candidate) bool { return x.Translate == c.Translate }) {
				carried = append(carried, c)
			}
			uses[k] = carried
		}
	}
	for _, carried := range uses {
		slices.SortFunc(carried, func(a, b plan.Candidate) int { return strings.Compare(string(a.Translate), string(b.Translate)) })
	}
	return uses
}

// unroutable names the declared channels no plan uses.
func unroutable(g *plan.Graph) []string {
	uses := channelUses(g)
	var out []string
	for pi := range g.Providers {
		for ci := range g.Providers[pi].Channels {
			if _, routable := uses[[2]int{pi, ci}]; !routable {
				out = append(out, channelName(g, pi, ci))
			}
		}
	}
	return out
}

// ageDays is the number of whole days from a YYYY-MM-DD date to now's date
// (UTC), or nil when there is no date.
func ageDays(date string, now time.Time) *int {
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return nil
	}
	y, m, day := now.UTC().Date()
	today := time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
	n := int(today.Sub(d).Hours() / 24)
	return &n
}
