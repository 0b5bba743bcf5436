package metrics

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pistra/pistra/runtime/meter"
)

// documented is one row of docs/metrics.md's table.
type documented struct {
	typ    string
	labels []string
}

// readDoc reads the series table of docs/metrics.md: name, type, labels.
func readDoc(t *testing.T) map[string]documented {
	t.Helper()
	f, err := os.Open("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]documented{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var labels []string
		for l := range strings.SplitSeq(cells[3], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out[name] = documented{typ: strings.TrimSpace(cells[2]), labels: labels}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// exercised is a Metrics on which every method has been called, so every
// series it can export has a sample.
func exercised() *Metrics {
	m := New()
	m.Request("chat_completions", "openai", 200, time.Millisecond)
	m.Retry("openai", "5xx")
	m.RetrySkipped("openai", RetryAfterOverCap)
	m.Failover("openai", "backup", "5xx")
	m.FailoverSkipped("backup", "budget_exceeded")
	m.StreamFailure("openai", StreamIncomplete)
	m.Tokens("chat", "openai", "gpt-4o", &meter.Usage{InputTokens: 1, OutputTokens: 1, Reported: true})
	m.Refused("invalid_api_key")
	m.Budget("team", 0.5, 1, 0)
	m.Downgrade("vendor", "compat", "strict_tools", DowngradeSkipped)
	m.Panic()
	m.Reload(true)
	m.PoolPick("vllm", "picked")
	m.PoolMembers("vllm", "", 2, time.Second)
	m.Served(&Served{Operation: "chat", Provider: "openai", RequestModel: "gpt", ResponseModel: "gpt-4o",
		Duration: time.Second, FirstToken: time.Millisecond, OutputTokens: 10})
	m.Attempt("chat", "openai", "gpt-4o", "", time.Second, time.Millisecond)
	m.Bundle("sha256:abc", "unsigned")
	m.ReadHealth(fakeHealth{ledger: &Ledger{Ready: true}, lastFlush: time.Now()})
	return m
}

// TestDocumentedSeries holds docs/metrics.md to what pistrad exports: every
// pistra_ and gen_ai_ family in a scrape is in the table with its type and
// labels, and every row of the table is in the scrape.
func TestDocumentedSeries(t *testing.T) {
	doc := readDoc(t)
	if len(doc) == 0 {
		t.Fatal("docs/metrics.md lists no series")
	}
	fams := scrape(t, exercised())
	for name, f := range fams {
		if !strings.HasPrefix(name, "pistra_") && !strings.HasPrefix(name, "gen_ai_") {
			continue
		}
		d, ok := doc[name]
		if !ok {
			t.Errorf("%s is exported but not in docs/metrics.md", name)
			continue
		}
		if typ := strings.ToLower(f.GetType().String()); typ != d.typ {
			t.Errorf("%s is a %s, documented as a %s", name, typ, d.typ)
		}
		if got := labelNames(f); !slices.Equal(got, d.labels) {
			t.Errorf("%s has labels %v, documented %v", name, got, d.labels)
		}
	}
	for name := range doc {
		if _, ok := fams[name]; !ok {
			t.Errorf("docs/metrics.md lists %s, which pistrad does not export", name)
		}
	}
}

func labelNames(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(out, l.GetName()) {
				out = append(out, l.GetName())
			}
		}
	}
	slices.Sort(out)
	return out
}
