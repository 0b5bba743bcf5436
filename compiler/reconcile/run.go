package reconcile

import (
	"context"
	"time"
)

// Provider is one provider to reconcile.
type Provider struct {
	// Name is the provider's name in the policy, as pistra's rows carry it.
	Name   string
	API    string
	Source UsageSource
	// SettleDelay is how long after a day ends it is judged.
	SettleDelay time.Duration
	Tolerance   float64
	// Workspaces says the source groups by workspace as pistra's rows do
	// (Anthropic); otherwise pistra's workspace ids are set aside.
	Workspaces bool
}

// Run is one reconcile: the days From to To (UTC, both included) of every
// provider, as of Now.
type Run struct {
	Pistra    PistraSource
	Providers []Provider
	From, To  time.Time
	Now       time.Time
}

// Report is a run's outcome.
type Report struct {
	AsOf      time.Time        `json:"as_of"`
	From      string           `json:"from"`
	To        string           `json:"to"`
	Status    Status           `json:"status"`
	Providers []ProviderReport `json:"providers"`
}

// Status sums a run up: what the exit status says.
type Status string

const (
	StatusMatch Status = "match"
	// StatusDrift: some row did not match.
	StatusDrift Status = "drift"
	// StatusError: a side could not be read; what was read is reported.
	StatusError Status = "error"
)

// ProviderReport is one provider's days.
type ProviderReport struct {
	Provider    string      `json:"provider"`
	API         string      `json:"api"`
	SettleDelay string      `json:"settle_delay"`
	Tolerance   float64     `json:"tolerance"`
	Error       string      `json:"error,omitempty"`
	Days        []DayReport `json:"days"`
}

// DayReport is one day of a provider: skipped with a reason, or judged.
type DayReport struct {
	Day     string      `json:"day"`
	Verdict Verdict     `json:"verdict"`
	Skipped string      `json:"skipped,omitempty"`
	Rows    []RowReport `json:"rows,omitempty"`
}

// Reconcile reads both sides and judges them. It fails only when pistra's
// side cannot be read (the report then names every provider unread); a
// provider that cannot be read is reported so.
func (r Run) Reconcile(ctx context.Context) (Report, error) {
	rep := Report{AsOf: r.Now.UTC(), From: r.From.Format(time.DateOnly), To: r.To.Format(time.DateOnly), Status: StatusMatch}
	var days []time.Time
	for d := day(r.From); !d.After(day(r.To)); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	pistra := make(map[time.Time][]PistraRow, len(days))
	for _, d := range days {
		rows, err := r.Pistra.Rows(ctx, d)
		if err != nil {
			// Every provider is reported unread, so the metrics of a run
			// that could not start still say so.
			rep.Status = StatusError
			for _, p := range r.Providers {
				rep.Providers = append(rep.Providers, ProviderReport{Provider: p.Name, API: p.API, SettleDelay: p.SettleDelay.String(),
					Tolerance: p.Tolerance, Error: "pistra's side could not be read: " + err.Error()})
			}
			return rep, err
		}
		pistra[d] = rows
	}
	for _, p := range r.Providers {
		pr := r.provider(ctx, p, days, pistra)
		rep.Providers = append(rep.Providers, pr)
		rep.Status = worse(rep.Status, pr)
	}
	return rep, nil
}

func worse(s Status, pr ProviderReport) Status {
	if pr.Error != "" {
		return StatusError
	}
	for _, d := range pr.Days {
		if d.Verdict != Match && d.Verdict != Skipped && s == StatusMatch {
			s = StatusDrift
		}
	}
	return s
}

// provider judges one provider's settled days.
func (r Run) provider(ctx context.Context, p Provider, days []time.Time, pistra map[time.Time][]PistraRow) ProviderReport {
	pr := ProviderReport{Provider: p.Name, API: p.API, SettleDelay: p.SettleDelay.String(), Tolerance: p.Tolerance}
	known := knownKeys(p.Name, pistra)
	var judged []time.Time
	for _, d := range days {
		if settled := d.AddDate(0, 0, 1).Add(p.SettleDelay); settled.After(r.Now) {
			pr.Days = append(pr.Days, DayReport{Day: d.Format(time.DateOnly), Verdict: Skipped,
				Skipped: "too recent: judged from " + settled.UTC().Format(time.RFC3339) + " (settle delay " + p.SettleDelay.String() + ")"})
			continue
		}
		judged = append(judged, d)
	}
	if len(judged) == 0 {
		return pr
	}
	got, err := p.Source.Days(ctx, judged[0], judged[len(judged)-1].AddDate(0, 0, 1), known != nil)
	if err != nil {
		pr.Error = err.Error()
		return pr
	}
	for _, d := range judged {
		dr := DayReport{Day: d.Format(time.DateOnly), Verdict: Match}
		pd := got[d]
		if pd == nil || !pd.Reported {
			dr.Verdict, dr.Skipped = Skipped, "the provider has not reported this day yet: its usage API is still lagging"
			pr.Days = append(pr.Days, dr)
			continue
		}
		provider := pd.Rows
		if p.Workspaces {
			provider = foldWorkspaces(provider, known)
		}
		dr.Rows = judgeDay(dayInput{pistra: pistraGroups(p, pistra[d], known != nil), provider: provider,
			pistraDayEmpty: len(pistra[d]) == 0, knownKeys: known, classes: p.Source.Classes(), tol: p.Tolerance})
		for _, row := range dr.Rows {
			if row.Verdict != Match && dr.Verdict == Match {
				dr.Verdict = Drift
			}
		}
		pr.Days = append(pr.Days, dr)
	}
	return pr
}

// knownKeys are the key ids pistra's rows of provider name, over every
// day read, each with the workspace id its rows name ("" for none): the
// keys pistra uses. nil when they name none.
func knownKeys(name string, pistra map[time.Time][]PistraRow) map[string]string {
	var known map[string]string
	for _, rows := range pistra {
		for _, row := range rows {
			if row.Provider != name || row.KeyID == "" {
				continue
			}
			if known == nil {
				known = map[string]string{}
			}
			if known[row.KeyID] == "" {
				known[row.KeyID] = row.WorkspaceID
			}
		}
	}
	return known
}

// foldWorkspaces files the provider's rows of a key pistra uses but names
// no workspace for under no workspace, as pistra's rows of it are. A key
// belongs to one workspace, so this joins the same traffic; a workspace
// the policy names is still held to the one the provider reports, and a
// key in the default workspace is reported with none (null) on both sides.
func foldWorkspaces(rows map[Group]Totals, known map[string]string) map[Group]Totals {
	out := make(map[Group]Totals, len(rows))
	for g, t := range rows {
		if ws, ok := known[g.KeyID]; ok && ws == "" {
			g.WorkspaceID = ""
		}
		out[g] = out[g].plus(t)
	}
	return out
}

// pistraGroups sums provider p's rows of a day by the grouping its usage
// API is read with.
func pistraGroups(p Provider, rows []PistraRow, byKey bool) map[Group]PistraRow {
	out := map[Group]PistraRow{}
	for _, row := range rows {
		if row.Provider != p.Name {
			continue
		}
		g := row.Group
		if !byKey {
			g.KeyID, g.WorkspaceID = "", ""
		} else if !p.Workspaces {
			g.WorkspaceID = ""
		}
		sum := out[g]
		sum.Provider, sum.Group = row.Provider, g
		sum.Totals = sum.Totals.plus(row.Totals)
		sum.Reasoning += row.Reasoning
		sum.Estimated += row.Estimated
		out[g] = sum
	}
	return out
}
