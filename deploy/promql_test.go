package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The PromQL the dashboard and the rules are written in is read with a
// few rewrites rather than a parser (Prometheus's is not a dependency of
// this module): what is left after removing strings, selectors, ranges
// and label lists is metric names, function names (followed by "(") and
// keywords. promtool checks the same expressions' syntax (TestQueriesParse).
var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promBraces   = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promOffset   = regexp.MustCompile(`\boffset\s+-?[0-9a-z]+`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"}
)

// metricNames are the metric names expr selects, sorted and once each.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promBraces.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	s = promOffset.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		name, before, after := s[loc[0]:loc[1]], s[:loc[0]], strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(after, "(") || slices.Contains(promKeywords, strings.ToLower(name)) ||
			strings.HasSuffix(before, "$") || strings.TrimRight(before, "0123456789.") != before {
			continue // a call, a keyword, a Grafana variable or a number's exponent
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestMetricNames: the names read from expressions of the forms the
// dashboard and the rules use, and none of their labels, functions,
// keywords, durations or variables.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`histogram_quantile(0.95, sum by (le, gen_ai_provider_name) (rate(gen_ai_server_request_duration_seconds_bucket{gen_ai_provider_name=~"$provider"}[$__rate_interval])))`: "gen_ai_server_request_duration_seconds_bucket",
		`sum(rate(pistra_requests_total{code!~"2.."}[5m])) / sum(rate(pistra_requests_total[5m]))`:                                                                               "pistra_requests_total",
		`sum by (provider, reason) (increase(pistra_failover_skipped_total[30m])) > 0 unless on (provider) sum by (provider) (increase(pistra_requests_total[30m])) > 0`:         "pistra_failover_skipped_total pistra_requests_total",
		`pistra_raft_commit_index - pistra_raft_applied_index offset 5m > 1e3`:                                                                                                   "pistra_raft_applied_index pistra_raft_commit_index",
		`max by (budget) (pistra_budget_used_ratio) > 0.8 and on() vector(1)`:                                                                                                    "pistra_budget_used_ratio",
		`label_replace(up, "provider", "$1", "job", "(.*)") == bool 1`:                                                                                                           "up",
		`sum(x) without (instance)`: "x",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("%s:\n got %q\nwant %q", expr, got, want)
		}
	}
}

// rule is one alerting rule of the shipped rule file.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// alertRules reads the shipped rule file, refusing keys a rule does not
// have.
func alertRules(t *testing.T) []rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, "prometheus/pistra.rules.yml"), &f); err != nil {
		t.Fatal(err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// promtool finds the promtool `make rules` uses: on PATH, or the one it
// unpacked from Debian's package.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if p, err := filepath.Abs("../.run/promtool/usr/bin/promtool"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("no promtool: `make rules` (scripts/promtool.sh) unpacks Debian's")
	return ""
}

// TestQueriesParse: every query of the dashboard, its Grafana variables
// given values, is PromQL promtool accepts (as the expression of a
// recording rule); and every alert rule is tested by the rule tests.
func TestQueriesParse(t *testing.T) {
	var rules []map[string]string
	for i, q := range dashboardQueries(t) {
		rules = append(rules, map[string]string{"record": "pistra:dashboard:q" + strconv.Itoa(i), "expr": grafanaValues(q)})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
	tests := string(readFile(t, "prometheus/pistra.rules.test.yml"))
	for _, r := range alertRules(t) {
		if !strings.Contains(tests, "alertname: "+r.Alert+"\n") {
			t.Errorf("alert %s has no case in pistra.rules.test.yml", r.Alert)
		}
	}
}

// grafanaValues gives a query's Grafana variables the values Grafana
// would: a rate interval, and a regex matching all for the selectors.
func grafanaValues(q string) string {
	return strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$provider", ".*", "$model", ".*").Replace(q)
}
