package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/meter"
)

const (
	reconcileTrafficKey = "sk-reconcile-traffic"
	reconcileAdminKey   = "sk-reconcile-admin"
	reconcileToken      = "pistra-admin-token"
)

var (
	reconcileDay = time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	reconcileNow = reconcileDay.Add(50 * time.Hour)
)

// reconcileSetup serves both fakes on a clock in reconcileDay, sends one
// answer to each as pistra would forward it, and serves pistra's side of
// them at /admin/v1/usage in pistrad's JSON shape, the rows metered from
// the answers by the gateway's own usage reader. It returns the policy
// directory naming the fakes' usage APIs and pistra's URL. The fakes'
// clock then stands at reconcileNow.
func reconcileSetup(t *testing.T) (dir, pistraURL string, fakes [2]*fakeprovider.Server) {
	t.Helper()
	var at atomic.Int64
	at.Store(reconcileDay.Add(10 * time.Hour).Unix())
	clock := func() time.Time { return time.Unix(at.Load(), 0) }
	o, oBase := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, AdminKey: reconcileAdminKey, Now: clock})
	a, aBase := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, AdminKey: reconcileAdminKey, Now: clock})
	rows := []map[string]any{
		meteredRow(t, "oai", fakeprovider.DialectOpenAI, oBase+"/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`, meter.ShapeChat),
		meteredRow(t, "claude", fakeprovider.DialectAnthropic, aBase+"/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}`, meter.ShapeMessages),
	}
	at.Store(reconcileNow.Unix())
	pistra := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/v1/usage" || r.Header.Get("Authorization") != "Bearer "+reconcileToken {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		day := r.URL.Query().Get("day")
		out := map[string]any{"day": day, "as_of": time.Now().UTC(), "retention_days": 62, "rows": []any{}}
		if day == reconcileDay.Format(time.DateOnly) {
			out["rows"] = rows
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(pistra.Close)
	dir = t.TempDir()
	catalog := fmt.Sprintf(`providers: {
	oai: {
		base_url: %q
		models: {"gpt-4o-mini": {}}
		channels: native: {dialect: "openai", tier: "native"}
		usage_api: {api: "openai", admin_key_env: "RECONCILE_OPENAI_ADMIN", settle_delay: "12h"}
	}
	claude: {
		base_url: %q
		models: {"claude-haiku-4-5": {}}
		channels: native: {dialect: "anthropic", tier: "native"}
		usage_api: {api: "anthropic", admin_key_env: "RECONCILE_ANTHROPIC_ADMIN"}
	}
}
keys: []
`, oBase, aBase)
	for name, src := range map[string]string{"catalog.cue": catalog, "profiles.cue": "profiles: a: {}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("RECONCILE_OPENAI_ADMIN", reconcileAdminKey)
	t.Setenv("RECONCILE_ANTHROPIC_ADMIN", reconcileAdminKey)
	t.Setenv("PISTRA_ADMIN_TOKEN", reconcileToken)
	return dir, pistra.URL, [2]*fakeprovider.Server{o, a}
}

// meteredRow sends body to url on the traffic key and returns pistra's
// row of the answer.
func meteredRow(t *testing.T, provider string, d fakeprovider.Dialect, url, body string, shape meter.Shape) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+reconcileTrafficKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	u, err := meter.ReadAnswer(shape, raw)
	if err != nil || !u.Reported {
		t.Fatalf("%s: %v %s", url, err, raw)
	}
	var model struct{ Model string }
	_ = json.Unmarshal(raw, &model)
	return map[string]any{"provider": provider, "model": model.Model, "key_id": fakeprovider.KeyID(d, reconcileTrafficKey), "workspace_id": "",
		"requests": 1, "estimated_requests": 0, "input_tokens": u.InputTokens, "cached_input_tokens": u.CachedInputTokens,
		"cache_creation_input_tokens": u.CacheCreationInputTokens, "output_tokens": u.OutputTokens, "reasoning_tokens": u.ReasoningTokens}
}

// reconcileAt runs pistrac reconcile in process as of now.
func reconcileAt(now time.Time, args ...string) result {
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, now: func() time.Time { return now }}
	code := c.dispatch(append([]string{"reconcile"}, args...))
	return result{out.String(), errOut.String(), code}
}

// TestReconcileExitStatus: matching sides exit 0; a skewed class 1, named
// in the text and in the JSON; a provider's admin key unset, pistra's
// token wrong or a usage API refusing the key exit 2.
func TestReconcileExitStatus(t *testing.T) {
	dir, pistraURL, fakes := reconcileSetup(t)
	now := reconcileNow
	day := reconcileDay.Format(time.DateOnly)
	r := reconcileAt(now, "-pistra", pistraURL, "-from", day, "-to", day, dir)
	r.want(t, 0)
	for _, want := range []string{"oai (openai usage API, settle delay 12h0m0s", "claude (anthropic usage API, settle delay 24h0m0s", day + "  match", ": match"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	if err := fakes[1].SetReport(fakeprovider.Report{Skew: &fakeprovider.Skew{Class: "cached_input", Factor: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := fakes[0].SetReport(fakeprovider.Report{Skew: &fakeprovider.Skew{Class: "output", Factor: 2}}); err != nil {
		t.Fatal(err)
	}
	r = reconcileAt(now, "-pistra", pistraURL, "-from", day, "-to", day, "-format", "json", dir)
	r.want(t, 1)
	var rep struct {
		Status    string
		Providers []struct {
			Provider string
			Days     []struct {
				Verdict string
				Rows    []struct {
					Classes []struct{ Class, Verdict string }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	drifted := map[string]bool{}
	for _, p := range rep.Providers {
		for _, d := range p.Days {
			for _, row := range d.Rows {
				for _, c := range row.Classes {
					if c.Verdict == "drift" {
						drifted[p.Provider+" "+c.Class] = true
					}
				}
			}
		}
	}
	if rep.Status != "drift" || !drifted["oai output"] || len(drifted) != 1 {
		// The fake's answer to "hello" has no cache read, so the zeroed
		// cached_input still matches: only oai's output drifts.
		t.Errorf("status %s, drifted %v; want oai's output alone", rep.Status, drifted)
	}

	t.Setenv("RECONCILE_ANTHROPIC_ADMIN", "")
	reconcileAt(now, "-pistra", pistraURL, dir).want(t, 2)
	t.Setenv("RECONCILE_ANTHROPIC_ADMIN", "sk-wrong")
	r = reconcileAt(now, "-pistra", pistraURL, "-from", day, "-to", day, dir)
	r.want(t, 2)
	if !strings.Contains(r.stdout, "could not read the usage API") || strings.Contains(r.stdout+r.stderr, "sk-wrong") {
		t.Errorf("a refused admin key: %s%s", r.stdout, r.stderr)
	}
	t.Setenv("PISTRA_ADMIN_TOKEN", "wrong")
	reconcileAt(now, "-pistra", pistraURL, "-from", day, "-to", day, dir).want(t, 2)
}
