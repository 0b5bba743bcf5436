package reconcile

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteJSON writes the report for a dashboard.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person: a line per day, a line per
// matching row, every class of a row that does not match, and why.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "reconcile %s to %s, as of %s: %s\n", r.From, r.To, r.AsOf.Format("2006-01-02T15:04:05Z"), r.Status)
	for _, p := range r.Providers {
		fmt.Fprintf(&b, "\n%s (%s usage API, settle delay %s, tolerance %g%%)\n", p.Provider, p.API, p.SettleDelay, p.Tolerance*100)
		if p.Error != "" {
			fmt.Fprintf(&b, "  could not read the usage API: %s\n", p.Error)
		}
		for _, d := range p.Days {
			writeDay(&b, d)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDay(b *strings.Builder, d DayReport) {
	if d.Verdict == Skipped {
		fmt.Fprintf(b, "  %s  skipped: %s\n", d.Day, d.Skipped)
		return
	}
	fmt.Fprintf(b, "  %s  %s\n", d.Day, d.Verdict)
	if len(d.Rows) == 0 {
		fmt.Fprintf(b, "    no traffic on either side\n")
	}
	for _, row := range d.Rows {
		name := row.Model
		if row.KeyID != "" {
			name += " key " + row.KeyID
		}
		if row.WorkspaceID != "" {
			name += " workspace " + row.WorkspaceID
		}
		if row.Verdict == Match {
			fmt.Fprintf(b, "    %-40s match (%s)\n", name, classSummary(row.Classes))
			continue
		}
		fmt.Fprintf(b, "    %-40s %s\n", name, row.Verdict)
		for _, c := range row.Classes {
			fmt.Fprintf(b, "      %-15s pistra %10d  provider %10d  diff %+9d (%6.2f%%)  %s\n",
				c.Class, c.Pistra, c.Provider, c.Diff, c.RelDiff*100, c.Verdict)
		}
		for _, why := range row.Why {
			fmt.Fprintf(b, "      why: %s\n", why)
		}
	}
}

func classSummary(cs []ClassReport) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %d", c.Class, c.Pistra)
	}
	return strings.Join(parts, ", ")
}
