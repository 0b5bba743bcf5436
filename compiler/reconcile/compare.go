package reconcile

import (
	"fmt"
	"slices"
	"strings"
)

// Verdict is what a comparison found.
type Verdict string

const (
	// Match: within the tolerance.
	Match Verdict = "match"
	// Drift: both sides have the row and differ by more than the tolerance.
	Drift Verdict = "drift"
	// MissingProvider: pistra metered the row, the provider reports none of it.
	MissingProvider Verdict = "missing_provider"
	// MissingPistra: the provider reports the row on a key pistra uses,
	// pistra metered none of it.
	MissingPistra Verdict = "missing_pistra"
	// Unmetered: the provider reports traffic on a key pistra never used:
	// it did not go through the gateway.
	Unmetered Verdict = "unmetered"
	// Skipped: the day was not judged (too recent, or the provider has
	// not reported it yet).
	Skipped Verdict = "skipped"
)

// ClassReport is one token class of one row.
type ClassReport struct {
	Class    Class `json:"class"`
	Pistra   int64 `json:"pistra"`
	Provider int64 `json:"provider"`
	// Diff is the provider's figure less pistra's.
	Diff int64 `json:"diff"`
	// RelDiff is |Diff| over the larger figure: 0 when they agree, 1 when
	// one side has none.
	RelDiff float64 `json:"rel_diff"`
	Verdict Verdict `json:"verdict"`
}

// RowReport is one (model, key, workspace) of a day.
type RowReport struct {
	Group
	Verdict Verdict       `json:"verdict"`
	Classes []ClassReport `json:"classes"`
	// Why is what the data says about a difference, when it says anything.
	Why []string `json:"why,omitempty"`
}

// compareRow judges the classes the provider reports of one row both
// sides may have.
func compareRow(g Group, p PistraRow, q Totals, classes []Class, tol float64) RowReport {
	r := RowReport{Group: g, Verdict: Match}
	for _, c := range classes {
		cr := judge(c, p.get(c), q.get(c), tol)
		r.Classes = append(r.Classes, cr)
		if cr.Verdict == Drift {
			r.Verdict = Drift
		}
	}
	if r.Verdict != Drift || p.Estimated == 0 {
		return r
	}
	for _, cr := range r.Classes {
		if cr.Verdict == Drift && cr.Diff > 0 && (cr.Class == ClassOutput || cr.Class == ClassInput) {
			r.Why = append(r.Why, fmt.Sprintf("%d of pistra's %d requests were settled at the estimate (their answers reported no usage), so their tokens are in none of its classes: the likely cause of the %s drift",
				p.Estimated, p.Requests, cr.Class))
		}
	}
	return r
}

// judge compares one class: a match while the relative difference is
// within tol.
func judge(c Class, pistra, provider int64, tol float64) ClassReport {
	cr := ClassReport{Class: c, Pistra: pistra, Provider: provider, Diff: provider - pistra, Verdict: Match}
	if big := max(pistra, provider); big > 0 {
		d := cr.Diff
		if d < 0 {
			d = -d
		}
		cr.RelDiff = float64(d) / float64(big)
	}
	if cr.RelDiff > tol {
		cr.Verdict = Drift
	}
	return cr
}

// oneSided is a row only one side has: every class the provider reports,
// the other side's figure 0.
func oneSided(g Group, v Verdict, t Totals, pistraSide bool, classes []Class, why string) RowReport {
	r := RowReport{Group: g, Verdict: v, Why: []string{why}}
	for _, c := range classes {
		cr := ClassReport{Class: c, Verdict: v}
		if pistraSide {
			cr.Pistra = t.get(c)
		} else {
			cr.Provider = t.get(c)
		}
		cr.Diff = cr.Provider - cr.Pistra
		if cr.Diff != 0 {
			cr.RelDiff = 1
		}
		r.Classes = append(r.Classes, cr)
	}
	return r
}

// dayInput is everything one provider's day is judged from.
type dayInput struct {
	pistra   map[Group]PistraRow
	provider map[Group]Totals
	// pistraDayEmpty: pistra has no row at all this day, of any provider.
	pistraDayEmpty bool
	// knownKeys are the provider-side keys pistra's rows name, with the
	// workspace they name; nil when they name none and the day is
	// compared per model only.
	knownKeys map[string]string
	classes   []Class
	tol       float64
}

// judgeDay compares every row either side has, in a stable order.
func judgeDay(in dayInput) []RowReport {
	groups := make([]Group, 0, len(in.pistra)+len(in.provider))
	for g := range in.pistra {
		groups = append(groups, g)
	}
	for g := range in.provider {
		if _, ok := in.pistra[g]; !ok {
			groups = append(groups, g)
		}
	}
	slices.SortFunc(groups, func(a, b Group) int {
		return strings.Compare(a.Model+"\x00"+a.KeyID+"\x00"+a.WorkspaceID, b.Model+"\x00"+b.KeyID+"\x00"+b.WorkspaceID)
	})
	out := make([]RowReport, 0, len(groups))
	for _, g := range groups {
		p, inPistra := in.pistra[g]
		q, inProvider := in.provider[g]
		switch {
		case inPistra && inProvider:
			out = append(out, compareRow(g, p, q, in.classes, in.tol))
		case inPistra:
			why := "the provider reports none of this model's traffic on this key this day"
			if len(in.provider) == 0 {
				why = "the provider reports no usage at all this day: a day missing from its ledger"
			}
			out = append(out, oneSided(g, MissingProvider, p.Totals, true, in.classes, why))
		case in.knownKeys != nil && !known(in.knownKeys, g.KeyID):
			out = append(out, oneSided(g, Unmetered, q, false, in.classes, unmeteredWhy(g.KeyID)))
		default:
			why := "pistra metered none of this model's traffic this day"
			if ws := in.knownKeys[g.KeyID]; ws != "" && ws != g.WorkspaceID {
				why = fmt.Sprintf("the provider reports key %q in workspace %q, the policy's usage_api names %q: its rows are filed apart", g.KeyID, g.WorkspaceID, ws)
			} else if in.pistraDayEmpty {
				why = "pistra has no rows at all for this day (no gateway traffic metered, or the day is past the ledger's retention)"
			}
			out = append(out, oneSided(g, MissingPistra, q, false, in.classes, why))
		}
	}
	return out
}

func known(keys map[string]string, key string) bool {
	_, ok := keys[key]
	return ok
}

// unmeteredWhy explains traffic on a key pistra does not use; a provider
// reports usage with no key (its console's playground) under none.
func unmeteredWhy(key string) string {
	if key == "" {
		return "traffic under no API key (the provider's own console or workbench): it did not go through the gateway"
	}
	return fmt.Sprintf("traffic on key %q, which pistra never used: it did not go through the gateway", key)
}
