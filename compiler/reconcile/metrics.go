package reconcile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ProviderVerdict sums one provider's report up: error when its usage
// API could not be read; drift when a judged row did not match; skipped
// when no day could be judged; else match.
func (p ProviderReport) ProviderVerdict() Verdict {
	if p.Error != "" {
		return verdictError
	}
	v := Skipped
	for _, d := range p.Days {
		switch d.Verdict {
		case Skipped:
		case Match:
			if v == Skipped {
				v = Match
			}
		default:
			return Drift
		}
	}
	return v
}

// verdictError is a provider whose side could not be read.
const verdictError Verdict = "error"

// providerVerdicts are the values pistra_reconcile_verdict's verdict label
// takes; each provider has one series of each, the one it is at 1.
var providerVerdicts = []Verdict{Match, Drift, Skipped, verdictError}

// Metrics renders the report in Prometheus' text exposition format, for
// node_exporter's textfile collector: reconcile runs from a scheduler and
// exits, so there is no process left to scrape.
func (r Report) Metrics() []byte {
	var b strings.Builder
	b.WriteString("# HELP pistra_reconcile_verdict The last reconcile's verdict per provider: 1 on the verdict it reached, 0 on the others.\n")
	b.WriteString("# TYPE pistra_reconcile_verdict gauge\n")
	for _, p := range r.Providers {
		got := p.ProviderVerdict()
		for _, v := range providerVerdicts {
			fmt.Fprintf(&b, "pistra_reconcile_verdict{provider=%s,verdict=%q} %d\n", quoteLabel(p.Provider), v, b2i(got == v))
		}
	}
	b.WriteString("# HELP pistra_reconcile_rows The last reconcile's judged rows per provider and verdict.\n")
	b.WriteString("# TYPE pistra_reconcile_rows gauge\n")
	for _, p := range r.Providers {
		counts := map[Verdict]int{}
		for _, d := range p.Days {
			for _, row := range d.Rows {
				counts[row.Verdict]++
			}
		}
		for _, v := range []Verdict{Match, Drift, MissingProvider, MissingPistra, Unmetered} {
			fmt.Fprintf(&b, "pistra_reconcile_rows{provider=%s,verdict=%q} %d\n", quoteLabel(p.Provider), v, counts[v])
		}
	}
	b.WriteString("# HELP pistra_reconcile_last_run_timestamp_seconds When the last reconcile ran (its as-of time), Unix seconds.\n")
	b.WriteString("# TYPE pistra_reconcile_last_run_timestamp_seconds gauge\n")
	fmt.Fprintf(&b, "pistra_reconcile_last_run_timestamp_seconds %d\n", r.AsOf.Unix())
	b.WriteString("# HELP pistra_reconcile_status The last reconcile's exit status: 0 match, 1 drift, 2 could not run.\n")
	b.WriteString("# TYPE pistra_reconcile_status gauge\n")
	fmt.Fprintf(&b, "pistra_reconcile_status %d\n", r.Status.ExitCode())
	return []byte(b.String())
}

// ExitCode is the status a command exits with for s.
func (s Status) ExitCode() int {
	switch s {
	case StatusMatch:
		return 0
	case StatusDrift:
		return 1
	}
	return 2
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quoteLabel quotes a label value as the exposition format escapes it:
// backslash, double quote and newline.
func quoteLabel(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// WriteTextfile writes the report's metrics to path atomically: into a
// file beside it, then renamed over it, so the collector never reads half
// a run.
func (r Report) WriteTextfile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("metrics textfile: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(r.Metrics()); err != nil {
		tmp.Close()
		return fmt.Errorf("metrics textfile %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("metrics textfile %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("metrics textfile %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("metrics textfile: %w", err)
	}
	return nil
}
