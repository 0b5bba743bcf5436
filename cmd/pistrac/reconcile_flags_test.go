package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// TestReconcileProviderNames: a -provider naming no provider with a
// usage API is an error naming those that have one, with the one a typo
// most likely meant; a right name reads that provider alone.
func TestReconcileProviderNames(t *testing.T) {
	dir, pistraURL, _ := reconcileSetup(t)
	day := reconcileDay.Format(time.DateOnly)
	r := reconcileAt(reconcileNow, "-pistra", pistraURL, "-from", day, "-to", day, "-provider", "claud", dir)
	r.want(t, 2)
	for _, want := range []string{`-provider "claud"`, "claude, oai", `did you mean "claude"?`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = reconcileAt(reconcileNow, "-pistra", pistraURL, "-from", day, "-to", day, "-provider", "claude", dir)
	r.want(t, 0)
	if strings.Contains(r.stdout, "oai (") || !strings.Contains(r.stdout, "claude (") {
		t.Errorf("-provider claude read another:\n%s", r.stdout)
	}
}

// TestReconcileAsOf: -as-of moves the clock the settle delay is judged by
// and -to defaults from: a day judged as of two days on is skipped as of
// its own afternoon; a time that is not RFC 3339 is a usage error.
func TestReconcileAsOf(t *testing.T) {
	dir, pistraURL, _ := reconcileSetup(t)
	day := reconcileDay.Format(time.DateOnly)
	early := reconcileDay.Add(15 * time.Hour).Format(time.RFC3339)
	r := reconcileAt(reconcileNow, "-pistra", pistraURL, "-from", day, "-to", day, "-as-of", early, dir)
	r.want(t, 0)
	if strings.Count(r.stdout, day+"  skipped: too recent") != 2 {
		t.Errorf("as of %s both providers' %s should be too recent:\n%s", early, day, r.stdout)
	}
	// As of reconcileNow from another clock: -to defaults to the day before.
	r = reconcileAt(time.Now(), "-pistra", pistraURL, "-from", day, "-as-of", reconcileNow.Format(time.RFC3339), dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, day+"  match") {
		t.Errorf("as of %s, %s is settled and matches:\n%s", reconcileNow, day, r.stdout)
	}
	reconcileAt(reconcileNow, "-pistra", pistraURL, "-as-of", "yesterday", dir).want(t, 2)
}

// TestReconcileTextfile: -textfile writes the verdicts in the exposition
// format, one series per provider and verdict with the reached one at 1,
// replaced whole on the next run (no temporary file left beside it).
func TestReconcileTextfile(t *testing.T) {
	dir, pistraURL, fakes := reconcileSetup(t)
	day := reconcileDay.Format(time.DateOnly)
	out := filepath.Join(t.TempDir(), "pistra_reconcile.prom")
	reconcileAt(reconcileNow, "-pistra", pistraURL, "-from", day, "-to", day, "-textfile", out, dir).want(t, 0)
	checkMetrics(t, out, map[string]string{
		`pistra_reconcile_verdict{provider="oai",verdict="match"}`:      "1",
		`pistra_reconcile_verdict{provider="oai",verdict="drift"}`:      "0",
		`pistra_reconcile_verdict{provider="claude",verdict="match"}`:   "1",
		`pistra_reconcile_rows{provider="oai",verdict="match"}`:         "1",
		`pistra_reconcile_last_run_timestamp_seconds`:                   fmt.Sprint(reconcileNow.Unix()),
		`pistra_reconcile_status`:                                       "0",
		`pistra_reconcile_verdict{provider="claude",verdict="skipped"}`: "0",
	})
	if err := fakes[0].SetReport(fakeprovider.Report{Skew: &fakeprovider.Skew{Class: "output", Factor: 2}}); err != nil {
		t.Fatal(err)
	}
	reconcileAt(reconcileNow, "-pistra", pistraURL, "-from", day, "-to", day, "-textfile", out, dir).want(t, 1)
	checkMetrics(t, out, map[string]string{
		`pistra_reconcile_verdict{provider="oai",verdict="match"}`:    "0",
		`pistra_reconcile_verdict{provider="oai",verdict="drift"}`:    "1",
		`pistra_reconcile_rows{provider="oai",verdict="drift"}`:       "1",
		`pistra_reconcile_verdict{provider="claude",verdict="match"}`: "1",
		`pistra_reconcile_status`:                                     "1",
	})
	// pistrad unreachable: every provider's verdict is error, still written.
	reconcileAt(reconcileNow, "-pistra", "http://"+closedAddr(t), "-from", day, "-to", day, "-textfile", out, dir).want(t, 2)
	checkMetrics(t, out, map[string]string{
		`pistra_reconcile_verdict{provider="oai",verdict="error"}`:    "1",
		`pistra_reconcile_verdict{provider="claude",verdict="error"}`: "1",
		`pistra_reconcile_status`:                                     "2",
	})
	entries, err := os.ReadDir(filepath.Dir(out))
	if err != nil || len(entries) != 1 {
		t.Errorf("beside the textfile: %v %v, want it alone", entries, err)
	}
}

// checkMetrics reads the textfile's samples and holds them to want.
func checkMetrics(t *testing.T, path string, want map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("not a sample: %q", line)
		}
		got[name] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q\n%s", k, got[k], v, raw)
		}
	}
}

func closedAddr(t *testing.T) string {
	s := httptest.NewServer(http.NotFoundHandler())
	addr := s.Listener.Addr().String()
	s.Close()
	return addr
}

// TestReconcileUsesProviderTLS: a provider behind mutual TLS with a
// private CA has its usage API read through the policy's tls block, as
// pistrad reaches it; without the block the handshake fails and the run
// exits 2.
func TestReconcileUsesProviderTLS(t *testing.T) {
	pki := testkit.NewPKI(t)
	_, base := fakeprovider.StartTLS(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, AdminKey: reconcileAdminKey},
		fakeprovider.TLSOptions{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, ClientCAFile: pki.CAFile})
	pistra := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"day": r.URL.Query().Get("day"), "rows": []any{}})
	}))
	t.Cleanup(pistra.Close)
	t.Setenv("RECONCILE_TLS_ADMIN", reconcileAdminKey)
	policy := func(tls string) string {
		dir := t.TempDir()
		catalog := fmt.Sprintf(`providers: tls: {
	base_url: %q
	%s
	models: {"gpt-4o-mini": {}}
	channels: native: {dialect: "openai", tier: "native"}
	usage_api: {api: "openai", admin_key_env: "RECONCILE_TLS_ADMIN"}
}
keys: []
`, base, tls)
		for name, src := range map[string]string{"catalog.cue": catalog, "profiles.cue": "profiles: a: {}\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	day := reconcileDay.Format(time.DateOnly)
	withTLS := policy(fmt.Sprintf(`tls: {ca_file: %q, cert_file: %q, key_file: %q}`, pki.CAFile, pki.ClientCert, pki.ClientKey))
	r := reconcileAt(reconcileNow, "-pistra", pistra.URL, "-from", day, "-to", day, withTLS)
	r.want(t, 0)
	if !strings.Contains(r.stdout, day+"  match") {
		t.Errorf("through the tls block:\n%s", r.stdout)
	}
	r = reconcileAt(reconcileNow, "-pistra", pistra.URL, "-from", day, "-to", day, policy(""))
	r.want(t, 2)
	if !strings.Contains(r.stdout, "could not read the usage API") || !strings.Contains(r.stdout, "certificate") {
		t.Errorf("without the tls block:\n%s", r.stdout)
	}
}
