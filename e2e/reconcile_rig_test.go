package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// The admin keys of the fakes' usage APIs, in the variables the policy
// names; pistrad is never given them, only pistrac reconcile.
const (
	adminOpenAI    = "sk-admin-e2e-openai"
	adminBackup    = "sk-admin-e2e-backup"
	adminAnthropic = "sk-admin-e2e-anthropic"
	// workspaceAnthropic is the workspace the Anthropic secret is a key of.
	workspaceAnthropic = "wrkspc_e2e"
)

var reconcileAdminEnv = []string{
	"E2E_OPENAI_ADMIN=" + adminOpenAI, "E2E_BACKUP_ADMIN=" + adminBackup, "E2E_ANTHROPIC_ADMIN=" + adminAnthropic,
	"PISTRA_ADMIN_TOKEN=" + adminToken,
}

// reconcileRig is pistrad as a process in front of three fakes whose
// clock the test can move on, and pistrac to reconcile them.
type reconcileRig struct {
	t                         *testing.T
	shift                     atomic.Int64 // the fakes' clock less the real one
	openai, backup, anthropic *fakeprovider.Server
	urls                      policy
	bundle, pistrac           string
	d                         *daemon
	pistrad                   string   // the binary
	env, args                 []string // pistrad's, for a restart
}

// reconcilePolicy is up-openai (cached input and reasoning in its answers)
// failing over to backup-openai, which serves the alias "fast" as another
// model, and up-anthropic, its key in a workspace. Each names its usage
// API, the id of its key and, for Anthropic, the key's workspace.
func reconcilePolicy(p policy) testkit.Policy {
	usage := func(api, provider, ws, env string) *testkit.UsageAPI {
		return &testkit.UsageAPI{API: api, KeyID: reconcileKeyID(provider), WorkspaceID: ws, AdminKeyEnv: env}
	}
	up := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini", "text-embedding-3-small")
	up.Aliases = map[string]string{"fast": "gpt-4o-mini"}
	up.Retries = retries(1, "5xx")
	up.Failover = failover([]string{"backup-openai"}, "5xx")
	up.UsageAPI = usage("openai", "up-openai", "", "E2E_OPENAI_ADMIN")
	backup := openAIProvider(p.Backup, envBackup, "backup-mini")
	backup.Aliases = map[string]string{"fast": "backup-mini"}
	backup.UsageAPI = usage("openai", "backup-openai", "", "E2E_BACKUP_ADMIN")
	backup.UsageAPI.SettleDelay = "6h"
	claude := anthropicProvider(p.Anthropic, 4096, "claude-haiku-4-5", "claude-sonnet-4-5")
	claude.UsageAPI = usage("anthropic", "up-anthropic", workspaceAnthropic, "E2E_ANTHROPIC_ADMIN")
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"up-openai": up, "backup-openai": backup, "up-anthropic": claude},
		Primary:   map[string]string{"fast": "up-openai"},
		Profiles:  map[string]testkit.Profile{"default": {Budgets: []string{"reconcile-day"}}},
		Keys:      []testkit.Key{clientKey("default", "default", keyDefault)},
		Budgets:   []testkit.Budget{dayBudget("reconcile-day", 1000000000)},
	}
}

// newReconcileRig starts the fakes and pistrad with args beyond -bundle
// (its ledger in memory unless they name -ledger-dir).
func newReconcileRig(t *testing.T, args ...string) *reconcileRig {
	t.Helper()
	r := &reconcileRig{t: t}
	now := func() time.Time { return time.Now().Add(time.Duration(r.shift.Load())) }
	// The OpenAI fake takes any key, as an organisation has many: the
	// test sends it traffic around the gateway on one of its own.
	r.openai, r.urls.OpenAI = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, AdminKey: adminOpenAI, Now: now,
		Usage: fakeprovider.Usage{Split: true}})
	r.backup, r.urls.Backup = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretBackup, AdminKey: adminBackup, Now: now})
	r.anthropic, r.urls.Anthropic = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: secretAnthropic,
		AdminKey: adminAnthropic, Now: now, Workspaces: map[string]string{secretAnthropic: workspaceAnthropic}})
	r.urls.Fixture = reconcilePolicy
	g, err := json.Marshal(compilePolicy(t, r.urls))
	if err != nil {
		t.Fatal(err)
	}
	r.bundle = filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(r.bundle, g, 0o644); err != nil {
		t.Fatal(err)
	}
	r.env = []string{"PISTRA_ADMIN_TOKEN=" + adminToken}
	for k, v := range upstreamEnv {
		r.env = append(r.env, k+"="+v)
	}
	r.pistrad, r.args = buildPistrad(t), append([]string{"-bundle", r.bundle}, args...)
	r.d = startDaemon(t, r.pistrad, r.env, r.args...)
	r.pistrac = buildCommand(t, "pistrac")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pistrad logs:\n%s", r.d.logs.String())
		}
	})
	return r
}

// killAndRestart ends pistrad with SIGKILL and starts it again as it was.
func (r *reconcileRig) killAndRestart() {
	r.t.Helper()
	if err := r.d.cmd.Process.Kill(); err != nil {
		r.t.Fatal(err)
	}
	<-r.d.exited
	r.d = startDaemon(r.t, r.pistrad, r.env, r.args...)
}

// post sends body to url with header and returns the whole answer,
// failing the test on anything but a 200.
func (r *reconcileRig) post(url string, header http.Header, body string) []byte {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	return raw
}

// openAI sends an OpenAI request through pistrad.
func (r *reconcileRig) openAI(path, body string) []byte {
	r.t.Helper()
	return r.post("http://"+r.d.public+"/v1/"+path, http.Header{"Authorization": {"Bearer " + keyDefault}}, body)
}

// messages sends an Anthropic request through pistrad.
func (r *reconcileRig) messages(body string) []byte {
	r.t.Helper()
	return r.post("http://"+r.d.public+"/v1/messages", http.Header{"X-Api-Key": {keyDefault}, "Anthropic-Version": {"2023-06-01"}}, body)
}

// usage is pistrad's rows of day.
func (r *reconcileRig) usage(day string) ([]usageRow, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+r.d.admin+"/admin/v1/usage?day="+day, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a usageAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("usage: %d %v", resp.StatusCode, err)
	}
	return a.Rows, nil
}

// reconcileKeyID is the id of the key pistrad forwards to provider with.
func reconcileKeyID(provider string) string {
	switch provider {
	case "up-openai":
		return fakeprovider.KeyID(fakeprovider.DialectOpenAI, secretOpenAI)
	case "backup-openai":
		return fakeprovider.KeyID(fakeprovider.DialectOpenAI, secretBackup)
	}
	return fakeprovider.KeyID(fakeprovider.DialectAnthropic, secretAnthropic)
}

// at sets the fakes' clock to t.
func (r *reconcileRig) at(t time.Time) { r.shift.Store(int64(time.Until(t))) }

// reconciled is pistrac reconcile's JSON report, read by the field names
// docs/reconcile.md gives.
type reconciled struct {
	Status    string `json:"status"`
	Providers []struct {
		Provider string `json:"provider"`
		Error    string `json:"error"`
		Days     []struct {
			Day     string `json:"day"`
			Verdict string `json:"verdict"`
			Skipped string `json:"skipped"`
			Rows    []reconciledRow
		} `json:"days"`
	} `json:"providers"`
}

type reconciledRow struct {
	Model       string   `json:"model"`
	KeyID       string   `json:"key_id"`
	WorkspaceID string   `json:"workspace_id"`
	Verdict     string   `json:"verdict"`
	Why         []string `json:"why"`
	Classes     []struct {
		Class    string `json:"class"`
		Pistra   int64  `json:"pistra"`
		Provider int64  `json:"provider"`
		Verdict  string `json:"verdict"`
	} `json:"classes"`
}

// reconcile runs the pistrac binary on day as of asOf, with the metrics
// written to textfile, and returns its exit status and report.
func (r *reconcileRig) reconcile(day string, asOf time.Time, textfile string) (int, reconciled) {
	r.t.Helper()
	cmd := exec.Command(r.pistrac, "reconcile", "-pistra", "http://"+r.d.admin, "-from", day, "-to", day,
		"-as-of", asOf.Format(time.RFC3339), "-format", "json", "-textfile", textfile, "-bundle", r.bundle)
	cmd.Env = append(os.Environ(), reconcileAdminEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			r.t.Fatalf("pistrac reconcile: %v", err)
		}
		code = exit.ExitCode()
	}
	var rep reconciled
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		r.t.Fatalf("pistrac reconcile (exit %d): %v\n%s\n%s", code, err, stdout.String(), stderr.String())
	}
	for _, secret := range []string{adminOpenAI, adminBackup, adminAnthropic, secretOpenAI, secretBackup, secretAnthropic} {
		if strings.Contains(stdout.String()+stderr.String(), secret) {
			r.t.Errorf("a secret appears in pistrac's output")
		}
	}
	return code, rep
}

// byProvider is a one-day report's rows per provider, by model and
// key; days maps each provider to its day.
func (rep reconciled) byProvider() (rows map[string]map[string]reconciledRow, days map[string]string) {
	rows, days = map[string]map[string]reconciledRow{}, map[string]string{}
	for _, p := range rep.Providers {
		rows[p.Provider] = map[string]reconciledRow{}
		for _, d := range p.Days {
			days[p.Provider] = d.Verdict + " " + d.Skipped
			for _, row := range d.Rows {
				rows[p.Provider][row.Model+" "+row.KeyID] = row
			}
		}
	}
	return rows, days
}
