package e2e

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/server"
)

// pistrac's exit statuses: success, and a regression found.
const (
	exitOK   = 0
	exitFail = 1
)

// probeOrigin is the origin of the claim in the overlay pistrac probe
// writes for testkit.ProbePolicy's channel.
const probeOrigin = "overlay:probe-vendor-compat"

// pistracRun runs the pistrac binary with the probe's credential set and
// fails unless it exits with code; it returns stdout and stderr.
func pistracRun(t *testing.T, bin string, code int, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), testkit.ProbeCredentialEnv+"="+secretOpenAI)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if got := cmd.ProcessState.ExitCode(); got != code {
		t.Fatalf("pistrac %s: exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, err, code, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// startBundle serves the bundle at path, the probe's credential given to
// the gateway as to pistrac.
func startBundle(t *testing.T, path string) *env {
	t.Helper()
	e := &env{t: t, logs: &testkit.SyncBuffer{}, bundlePath: path}
	srv, err := server.New(server.Options{
		PublicAddr: "127.0.0.1:0",
		AdminAddr:  "127.0.0.1:0",
		AdminToken: adminToken,
		Load:       e.loadBundle,
		LookupEnv: func(k string) (string, bool) {
			return secretOpenAI, k == testkit.ProbeCredentialEnv
		},
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(e.stop)
	return e
}

// TestProbeOverlayServed: the overlay pistrac probe writes into a policy
// directory compiles with it (check -strict passes), its claim, newer than
// the catalog's, is the one decisions act on (a strict-tools request the
// catalog's claim refuses is served), and its origin reaches the response
// header. Once the endpoint stops honouring strict_tools, a second probe
// reads the current claim from that overlay and exits 1 naming it.
func TestProbeOverlayServed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pistrac")
	}
	bin := buildCommand(t, "pistrac")
	fake, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
	fake.SetDrops(fakeprovider.Drops(plan.Of(plan.CapMultiChoice)))
	dir := t.TempDir()
	// The catalog's own claim: nothing preserved, verified 2026-11-20.
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), testkit.ProbePolicy("openai", base).Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	built := t.TempDir()
	pistracRun(t, bin, exitOK, "build", "-o", built, dir)
	e := startBundle(t, filepath.Join(built, "bundle.json"))
	client := e.openaiClient(testkit.ProbeKey)
	_, err := client.Chat.Completions.New(context.Background(), strictParams("vendor-large"))
	wantOpenAIError(t, err, http.StatusBadRequest, "fidelity_loss")

	pistracRun(t, bin, exitOK, "probe", "-yes", "-provider", "vendor", "-channel", "compat", dir)
	overlay, err := os.ReadFile(filepath.Join(dir, "probe-vendor-compat.cue"))
	if err != nil {
		t.Fatalf("no overlay in the policy directory: %v", err)
	}
	if claim := testkit.ParseOverlay(t, overlay)["probe-vendor-compat"]["vendor"]["compat"]; !strings.Contains(strings.Join(claim.Preserves, ","), "strict_tools") {
		t.Fatalf("the overlay does not claim strict_tools:\n%s", overlay)
	}
	pistracRun(t, bin, exitOK, "check", "-strict", dir)
	catalog, _ := pistracRun(t, bin, exitOK, "catalog", dir)
	if !strings.Contains(catalog, "vendor/compat: the claim of "+probeOrigin+" (verified_at ") ||
		!strings.Contains(catalog, "\n  catalog.cue  2026-11-20 ") {
		t.Errorf("the catalog does not show the overlay winning over catalog.cue:\n%s", catalog)
	}
	pistracRun(t, bin, exitOK, "build", "-o", built, dir)
	if resp := e.adminDo(http.MethodPost, "/admin/v1/reload"); resp.StatusCode != http.StatusOK {
		t.Fatalf("reload: %d", resp.StatusCode)
	}
	var resp *http.Response
	if _, err := client.Chat.Completions.New(context.Background(), strictParams("vendor-large"), option.WithResponseInto(&resp)); err != nil {
		t.Fatalf("the overlay's claim was not acted on: %v", err)
	}
	if got := resp.Header.Get(record.HeaderChannelOrigin); got != probeOrigin {
		t.Errorf("%s: %q, want %q", record.HeaderChannelOrigin, got, probeOrigin)
	}

	fake.SetDrops(fakeprovider.Drops(plan.Of(plan.CapMultiChoice, plan.CapStrictTools)))
	_, stderr := pistracRun(t, bin, exitFail, "probe", "-yes", "-provider", "vendor", "-channel", "compat", dir)
	if !strings.Contains(stderr, "regression: vendor/compat drops strict_tools") || strings.Count(stderr, "regression") != 1 ||
		!strings.Contains(stderr, "origin "+probeOrigin) {
		t.Errorf("stderr %q: want the one regression, strict_tools, against the overlay's claim", stderr)
	}
}

// TestProbeOverlayLosesToNewer: the rule works both ways. A catalog claim
// dated after the probe's overlay wins over it again, so re-reading the
// source on a later day replaces what the probe saw.
func TestProbeOverlayLosesToNewer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pistrac")
	}
	bin := buildCommand(t, "pistrac")
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
	dir := t.TempDir()
	p := testkit.ProbePolicy("openai", base)
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), p.Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	pistracRun(t, bin, exitOK, "probe", "-yes", "-provider", "vendor", "-channel", "compat", dir)
	if got := compiledOrigin(t, dir); got != probeOrigin {
		t.Fatalf("origin %q after the probe, want %q", got, probeOrigin)
	}
	// Tomorrow is within the day of slack a claim's date is given.
	ch := p.Providers["vendor"].Channels["compat"]
	ch.VerifiedAt = time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	p.Providers["vendor"].Channels["compat"] = ch
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), p.Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := compiledOrigin(t, dir); got != "catalog.cue" {
		t.Errorf("origin %q with the catalog's claim the newer, want catalog.cue", got)
	}
}

// compiledOrigin is the origin of the claim vendor/compat carries in the
// graph compiled from dir.
func compiledOrigin(t *testing.T, dir string) string {
	t.Helper()
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Providers {
		for _, c := range p.Channels {
			if p.Name == "vendor" && c.Name == "compat" {
				return c.Origin
			}
		}
	}
	t.Fatal("no vendor/compat in the graph")
	return ""
}
