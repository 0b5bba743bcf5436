package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/server"
)

// Credentials used by the tests. The upstream secrets must never be seen
// by a fake provider other than their own, nor appear in a log.
const (
	keyDefault = "sk-e2e-default"
	keyLimited = "sk-e2e-limited"
	keyMetered = "sk-e2e-metered"
	adminToken = "e2e-admin-token"

	secretOpenAI    = "sk-upstream-openai-secret"
	secretBackup    = "sk-upstream-backup-secret"
	secretAnthropic = "sk-upstream-anthropic-secret"
)

var upstreamEnv = map[string]string{
	envOpenAI:    secretOpenAI,
	envBackup:    secretBackup,
	envAnthropic: secretAnthropic,
}

// policy is what a gateway is started with: the URLs of its fakes, and
// the fixture building the policy it serves for them.
type policy struct {
	OpenAI, Backup, Anthropic, Dead string
	// Fixture is nil for defaultPolicy.
	Fixture fixture
}

// source is the policy's CUE.
func (p policy) source() []byte {
	if p.Fixture == nil {
		return defaultPolicy(p).Source()
	}
	return p.Fixture(p).Source()
}

// env is one running gateway with its fake upstreams.
type env struct {
	t                         *testing.T
	openai, backup, anthropic *fakeprovider.Server
	policy                    policy
	srv                       *server.Server
	bundlePath                string
	logs                      *testkit.SyncBuffer
	stopped                   bool
}

// start brings up three fakes, compiles defaultPolicy into a bundle file
// and serves it on random loopback ports.
func start(t *testing.T) *env {
	t.Helper()
	return startWith(t, defaultPolicy)
}

// startWith is start serving the policy f builds instead.
func startWith(t *testing.T, f fixture) *env {
	t.Helper()
	return startWithOptions(t, f, nil)
}

// startWithOptions is startWith with the server's options adjusted by mod.
func startWithOptions(t *testing.T, f fixture, mod func(*server.Options)) *env {
	t.Helper()
	e := &env{t: t, logs: &testkit.SyncBuffer{}}
	var openaiURL, backupURL, anthropicURL string
	e.openai, openaiURL = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
	e.backup, backupURL = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretBackup})
	e.anthropic, anthropicURL = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: secretAnthropic})
	e.policy = policy{OpenAI: openaiURL, Backup: backupURL, Anthropic: anthropicURL, Dead: "http://" + closedPort(t) + "/v1", Fixture: f}
	e.bundlePath = filepath.Join(t.TempDir(), "bundle.json")
	e.writeBundle(e.policy)

	opts := server.Options{
		PublicAddr:   "127.0.0.1:0",
		AdminAddr:    "127.0.0.1:0",
		AdminToken:   adminToken,
		MaxBodyBytes: 1 << 20,
		Load:         e.loadBundle,
		LookupEnv:    func(k string) (string, bool) { v, ok := upstreamEnv[k]; return v, ok },
		Logger:       slog.New(record.NewJSONHandler(e.logs, nil)),
		MaxRetryWait: 50 * time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	srv, err := server.New(opts)
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

func (e *env) stop() {
	if !e.stopped {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.srv.Shutdown(ctx); err != nil {
			e.t.Errorf("shutdown: %v", err)
		}
		e.stopped = true
	}
	logs := e.logs.String()
	for _, secret := range upstreamEnv {
		if strings.Contains(logs, secret) {
			e.t.Errorf("an upstream secret appears in the logs")
		}
	}
	for _, key := range []string{keyDefault, keyLimited, keyMetered} {
		if strings.Contains(logs, key) {
			e.t.Errorf("a client key appears in the logs")
		}
	}
	if e.t.Failed() {
		e.t.Logf("pistrad logs:\n%s", logs)
	}
}

// writeBundle compiles p and writes it where the gateway loads it from.
func (e *env) writeBundle(p policy) {
	e.t.Helper()
	g := compilePolicy(e.t, p)
	b, err := json.Marshal(g)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(e.bundlePath, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) loadBundle() (*plan.Graph, string, error) {
	b, err := os.ReadFile(e.bundlePath)
	if err != nil {
		return nil, e.bundlePath, err
	}
	g, err := bundle.Load(b)
	return g, e.bundlePath, err
}

func compilePolicy(t *testing.T, p policy) *plan.Graph {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.cue"), p.source(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatalf("compile the test policy: %v", err)
	}
	return g
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// baseURL is the gateway's /v1 URL.
func (e *env) baseURL() string { return "http://" + e.srv.PublicAddr() + "/v1/" }

// adminDo sends an authenticated admin request.
func (e *env) adminDo(method, path string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, "http://"+e.srv.AdminAddr()+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}
