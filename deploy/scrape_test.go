package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// Credentials of the scrape test's gateway and fakes.
const (
	scrapeKey   = "sk-deploy-scrape"
	scrapeAdmin = "deploy-scrape-admin"
	upSecret    = "sk-deploy-up"
	backSecret  = "sk-deploy-backup"
)

// scrapePolicy: up-openai retries once and fails over to backup-openai,
// then to spare-openai, which the profile's rule always excludes; up-openai
// has a circuit (that its few failures do not open); the key's profile
// draws on a budget.
func scrapePolicy(up, backup, dead string) testkit.Policy {
	native := map[string]testkit.Channel{"native": {Dialect: "openai", Tier: "native"}}
	model := map[string]testkit.Model{"gpt-4o-mini": {}}
	upOpenAI := testkit.Provider{BaseURL: up, CredentialEnv: "DEPLOY_UP_KEY", Models: model, Channels: native, Timeout: "5s",
		Retries:  &testkit.Retries{Max: 1, Backoff: "10ms", On: []string{"5xx"}},
		Failover: &testkit.Failover{To: []string{"backup-openai", "spare-openai"}, On: []string{"5xx"}},
		Circuit:  &testkit.Circuit{Failures: 100, CoolDown: "1s"}}
	return testkit.Policy{
		Providers: map[string]testkit.Provider{
			"up-openai":     upOpenAI,
			"backup-openai": {BaseURL: backup, CredentialEnv: "DEPLOY_BACKUP_KEY", Models: model, Channels: native, Timeout: "5s"},
			"spare-openai":  {BaseURL: dead, CredentialEnv: "DEPLOY_BACKUP_KEY", Models: model, Channels: native, Timeout: "5s"},
		},
		Primary: map[string]string{"gpt-4o-mini": "up-openai"},
		Profiles: map[string]testkit.Profile{"default": {Budgets: []string{"team"},
			AccessRules: []testkit.Rule{{Name: "no-spare", When: `provider == "spare-openai"`, Code: "spare_excluded"}}}},
		Keys:    []testkit.Key{{Name: "team", Profile: "default", Secret: scrapeKey}},
		Budgets: []testkit.Budget{{Name: "team", Limit: 1_000_000, Window: "day", Cost: testkit.Cost{Type: "TotalToken"}}},
	}
}

// TestDashboardAndRulesNamesInAScrape: every metric name the dashboard and
// the alert rules use is in a scrape of a running pistrad (the binary, on
// a raft ledger of one node) that served, streamed, retried, failed over,
// skipped a candidate, broke a stream, refused a key and refused a reload.
// A series renamed in pistrad, or misspelt in deploy/, fails it.
func TestDashboardAndRulesNamesInAScrape(t *testing.T) {
	used := usedNames(t)
	up, upURL := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: upSecret})
	backup, backupURL := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: backSecret})
	dir := t.TempDir()
	policyDir, bundlePath := filepath.Join(dir, "policy"), filepath.Join(dir, "bundle.json")
	if err := os.Mkdir(policyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(policyDir, "policy.cue"), scrapePolicy(upURL, backupURL, "http://127.0.0.1:1/v1").Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := compiler.Compile(policyDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundlePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	public, admin, _ := startPistrad(t, []string{"-bundle", bundlePath, "-ledger-dir", filepath.Join(dir, "ledger"),
		"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0"},
		map[string]string{"DEPLOY_UP_KEY": upSecret, "DEPLOY_BACKUP_KEY": backSecret, "PISTRA_ADMIN_TOKEN": scrapeAdmin})

	chat := func(key string, stream bool) int {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say something long enough"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
		return send(t, http.MethodPost, "http://"+public+"/v1/chat/completions", key, body)
	}
	if code := chat("sk-not-a-key", false); code != http.StatusUnauthorized {
		t.Errorf("an unknown key: %d, want 401", code)
	}
	if chat(scrapeKey, false) != http.StatusOK || chat(scrapeKey, true) != http.StatusOK {
		t.Fatal("a plain and a streamed request were not served")
	}
	setFaults(t, up, fakeprovider.Faults{FailStatus: 503})
	setFaults(t, backup, fakeprovider.Faults{FailStatus: 503})
	if code := chat(scrapeKey, false); code != http.StatusServiceUnavailable {
		t.Errorf("every candidate failing: %d, want 503", code)
	}
	setFaults(t, up, fakeprovider.Faults{CutAfter: 2})
	setFaults(t, backup, fakeprovider.Faults{})
	chat(scrapeKey, true) // its status is sent before the cut
	if err := os.WriteFile(bundlePath, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := send(t, http.MethodPost, "http://"+admin+"/admin/v1/reload", scrapeAdmin, ""); code == http.StatusOK {
		t.Error("a broken bundle's reload was applied")
	}

	// The budget's gauges and the flush age appear with the first flush.
	var scrape []byte
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		scrape = get(t, "http://"+public+"/metrics")
		if missing = missingNames(t, used, scrape); len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Fatalf("the dashboard or the rules use series a running pistrad does not export: %v", missing)
	}
	renamed := bytes.ReplaceAll(scrape, []byte("pistra_failover_total"), []byte("pistra_failovers_total"))
	if got := missingNames(t, used, renamed); !slices.Equal(got, []string{"pistra_failover_total"}) {
		t.Errorf("with pistra_failover_total renamed in the scrape, missing %v", got)
	}
}

// usedNames are the metric names of the dashboard's queries and of the
// alert rules.
func usedNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, q := range dashboardQueries(t) {
		names = append(names, metricNames(q)...)
	}
	for _, r := range alertRules(t) {
		names = append(names, metricNames(r.Expr)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// missingNames are the names of used that no sample of scrape has: a
// histogram family's samples are its _bucket, _sum and _count.
func missingNames(t *testing.T, used []string, scrape []byte) []string {
	t.Helper()
	have := map[string]bool{}
	for name, f := range testkit.Scrape(t, bytes.NewReader(scrape)) {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			have[name+"_bucket"], have[name+"_sum"], have[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			have[name], have[name+"_sum"], have[name+"_count"] = true, true, true
		default:
			have[name] = true
		}
	}
	var missing []string
	for _, n := range used {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	return missing
}

func setFaults(t *testing.T, f *fakeprovider.Server, faults fakeprovider.Faults) {
	t.Helper()
	if err := f.SetFaults(faults); err != nil {
		t.Fatal(err)
	}
}

// send makes a request with a bearer token and returns its status, the
// body read to its end.
func send(t *testing.T, method, url, token, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
