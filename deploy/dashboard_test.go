package deploy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// dashboard is what the tests read of the shipped Grafana dashboard.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(readFile(t, "grafana/pistra.json"), &d); err != nil {
		t.Fatalf("grafana/pistra.json: %v", err)
	}
	return d
}

// panels are the dashboard's panels, a row's included, rows left out.
func (d dashboard) panels() []panel {
	var out []panel
	for _, p := range d.Panels {
		if p.Type == "row" {
			out = append(out, p.Panels...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// labelValues is a query variable's label_values(SELECTOR, LABEL).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\)$`)

// dashboardQueries are the PromQL of every panel's targets and of the
// query variables' label_values selectors.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	d := readDashboard(t)
	var out []string
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)["query"].(string)
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: query %q, want label_values(SELECTOR, LABEL)", v.Name, q)
		}
		out = append(out, m[1])
	}
	return out
}

// TestDashboardShape: every panel has a title, queries the dashboard's
// Prometheus variable, has unique ids and fits the 24-column grid; and the
// dashboard draws what an operator of pistrad looks for, each on the
// series that carries it.
func TestDashboardShape(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q", d.UID, d.Title)
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
	}
	var all []string
	for _, p := range d.panels() {
		if p.Title == "" || p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: wants a title, the ${datasource} variable and a query", p.ID, p.Title)
		}
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, p.GridPos)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q: a target without a query or refId", p.Title)
			}
			all = append(all, p.Title+": "+tg.Expr)
		}
	}
	for what, want := range map[string][]string{
		"traffic":                      {"rate(pistra_requests_total"},
		"errors by code":               {"by (code", `code!~"2.."`, "pistra_requests_total"},
		"p50 duration by model":        {"histogram_quantile(0.5, sum by (le, gen_ai_provider_name, gen_ai_request_model)", "gen_ai_server_request_duration_seconds_bucket"},
		"p95 duration by model":        {"histogram_quantile(0.95, sum by (le, gen_ai_provider_name, gen_ai_request_model)", "gen_ai_server_request_duration_seconds_bucket"},
		"p99 duration by model":        {"histogram_quantile(0.99, sum by (le, gen_ai_provider_name, gen_ai_request_model)", "gen_ai_server_request_duration_seconds_bucket"},
		"p50 time to first token":      {"histogram_quantile(0.5, sum by (le, gen_ai_provider_name, gen_ai_request_model)", "gen_ai_server_time_to_first_token_seconds_bucket"},
		"p95 time to first token":      {"histogram_quantile(0.95, sum by (le, gen_ai_provider_name, gen_ai_request_model)", "gen_ai_server_time_to_first_token_seconds_bucket"},
		"p99 time to first token":      {"histogram_quantile(0.99, sum by (le, gen_ai_provider_name, gen_ai_request_model)", "gen_ai_server_time_to_first_token_seconds_bucket"},
		"tokens by class":              {"by (gen_ai_token_type)", "gen_ai_client_token_usage_total"},
		"budgets' used ratio":          {"by (budget)", "pistra_budget_used_ratio"},
		"failovers by reason":          {"by (from, to, reason)", "pistra_failover_total"},
		"skips by reason":              {"by (provider, reason)", "pistra_failover_skipped_total"},
		"circuits":                     {"by (provider)", "pistra_circuit_state"},
		"a leader known":               {"pistra_raft_has_leader"},
		"ledger flushes":               {"pistra_ledger_degraded"},
		"replicas applying the ledger": {"pistra_raft_commit_index - pistra_raft_applied_index"},
	} {
		if !anyHasAll(all, want) {
			t.Errorf("no panel draws %s (a query with %q)", what, want)
		}
	}
}

func anyHasAll(queries, parts []string) bool {
	for _, q := range queries {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(q, p)
		}
		if ok {
			return true
		}
	}
	return false
}
