// Package catalog says what a decision graph offers: every channel some
// plan can route to, with the provenance and age of its capability claim,
// and the declared channels no plan reaches. pistrad's admin API serves
// these rows for the snapshot it is running and `pistrac catalog` prints
// them for a policy or a bundle, so both answer from this one reading of
// *plan.Graph.
package catalog

import (
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// Row is one routable channel and the provenance of its capability claim.
// pistrad's admin catalog report serves these rows as JSON.
type Row struct {
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
	// Overrode lists the claims this row's won over (the catalog's own, a
	// preset's or a file's, and older overlays'), the next in line first.
	Overrode []Overridden `json:"overrode,omitempty"`
}

// Overridden is a claim another won over, with its age.
type Overridden struct {
	plan.Claim
	AgeDays *int `json:"age_days,omitempty"`
}

// Rows lists every routable channel (one that some plan uses as a
// candidate, natively or to carry a translation), in the graph's provider
// and channel order, with each claim's age relative to now.
func Rows(g *plan.Graph, now time.Time) []Row {
	uses := channelUses(g)
	var rows []Row
	for pi := range g.Providers {
		prov := &g.Providers[pi]
		for ci := range prov.Channels {
			carried, routable := uses[[2]int{pi, ci}]
			if !routable {
				continue
			}
			ch := &prov.Channels[ci]
			rows = append(rows, Row{
				Provider: prov.Name, Channel: ch.Name, Dialect: ch.Dialect, Tier: ch.Tier,
				ModelGate: ch.ModelGate, Routes: ch.Routes, Preserves: ch.Preserves,
				Origin: ch.Origin, VerifiedAt: ch.VerifiedAt, VerifiedBy: ch.VerifiedBy,
				AgeDays: ageDays(ch.VerifiedAt, now), Overrode: overridden(ch.Overrode, now),
			})
			for _, c := range carried {
				in := c.Translate.Inbound()
				rows = append(rows, Row{
					Provider: prov.Name, Channel: ch.Name, Dialect: in.Dialect(), Tier: plan.TierTranslation,
					ModelGate: ch.ModelGate, Routes: []plan.Route{in}, Preserves: c.Preserves,
					Origin: c.Origin, VerifiedBy: translate.Claim(c.Translate), Translation: c.Translate,
				})
			}
		}
	}
	return rows
}

// Unroutable names, as provider/channel, the declared channels no plan
// uses.
func Unroutable(g *plan.Graph) []string {
	uses := channelUses(g)
	var out []string
	for pi := range g.Providers {
		prov := &g.Providers[pi]
		for ci := range prov.Channels {
			if _, routable := uses[[2]int{pi, ci}]; !routable {
				out = append(out, prov.Name+"/"+prov.Channels[ci].Name)
			}
		}
	}
	return out
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

func overridden(claims []plan.Claim, now time.Time) []Overridden {
	var out []Overridden
	for _, c := range claims {
		out = append(out, Overridden{Claim: c, AgeDays: ageDays(c.VerifiedAt, now)})
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
