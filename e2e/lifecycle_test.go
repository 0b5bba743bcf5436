package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/server"
)

func (e *env) status() admin.Status {
	e.t.Helper()
	resp := e.adminDo(http.MethodGet, "/admin/v1/status")
	defer resp.Body.Close()
	var st admin.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) reload() int {
	e.t.Helper()
	resp := e.adminDo(http.MethodPost, "/admin/v1/reload")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// slowStream starts a chat stream the fake paces at one event per delay,
// and returns once its first chunk is in, with a function that drains the
// rest and returns the text.
func (e *env) slowStream(delay time.Duration) func() (string, error) {
	e.t.Helper()
	e.setFaults(e.openai, fakeprovider.Faults{ChunkDelay: delay})
	client := e.openaiClient(keyDefault)
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams("fast"))
	var acc openai.ChatCompletionAccumulator
	if !stream.Next() {
		e.t.Fatalf("stream did not start: %v", stream.Err())
	}
	acc.AddChunk(stream.Current())
	return func() (string, error) {
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			return "", err
		}
		return acc.Choices[0].Message.Content, nil
	}
}

// TestReload: a good bundle swaps in (a new key starts working) while an
// in-flight stream finishes on the old snapshot; a bad one is refused and
// the active one keeps serving.
func TestReload(t *testing.T) {
	e := start(t)
	const newKey = "sk-e2e-added-by-reload"
	before := e.status()
	newClient := e.openaiClient(newKey)
	_, err := newClient.Chat.Completions.New(context.Background(), chatParams("fast"))
	wantOpenAIError(t, err, http.StatusUnauthorized, "invalid_api_key")

	finish := e.slowStream(20 * time.Millisecond)
	p := e.policy
	p.Fixture = func(p policy) testkit.Policy {
		pol := defaultPolicy(p)
		pol.Keys = append(pol.Keys, clientKey(newKey, "default", newKey))
		return pol
	}
	e.writeBundle(p)
	if code := e.reload(); code != http.StatusOK {
		t.Fatalf("good reload answered %d", code)
	}
	after := e.status()
	if after.SourceHash == before.SourceHash || !after.LoadedAt.After(before.LoadedAt) || after.LastReloadError != "" {
		t.Fatalf("status before %+v after %+v", before, after)
	}
	if text, err := finish(); err != nil || text != fakeprovider.ReplyText(prompt) {
		t.Fatalf("in-flight stream across the reload: %q %v", text, err)
	}
	e.setFaults(e.openai, fakeprovider.Faults{})
	if _, err := newClient.Chat.Completions.New(context.Background(), chatParams("fast")); err != nil {
		t.Fatalf("the reloaded key does not work: %v", err)
	}

	if err := os.WriteFile(e.bundlePath, []byte(`{"source_hash": "broken"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := e.reload(); code != http.StatusUnprocessableEntity {
		t.Fatalf("bad reload answered %d", code)
	}
	st := e.status()
	if st.SourceHash != after.SourceHash || st.LastReloadError == "" {
		t.Fatalf("after a refused reload: %+v", st)
	}
	if _, err := newClient.Chat.Completions.New(context.Background(), chatParams("fast")); err != nil {
		t.Fatalf("the old snapshot stopped serving after a refused reload: %v", err)
	}
	if testkit.Counter(t, e.srv.Metrics().Registry(), "pistra_reloads_total", map[string]string{"result": "refused"}) != 1 {
		t.Errorf("refused reload not counted")
	}
}

// TestShutdownLetsStreamsFinish: shutdown waits for a slow stream to end
// whole, refuses new connections meanwhile, and returns cleanly.
func TestShutdownLetsStreamsFinish(t *testing.T) {
	e := start(t)
	finish := e.slowStream(30 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- e.srv.Shutdown(ctx)
	}()
	text, err := finish()
	if err != nil || text != fakeprovider.ReplyText(prompt) {
		t.Fatalf("stream during shutdown: %q %v", text, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	e.stopped = true
	if _, err := http.Get("http://" + e.srv.PublicAddr() + "/healthz"); err == nil {
		t.Errorf("the gateway still accepts connections after shutdown")
	}
}

func TestHealthAndMetrics(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("fast")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/readyz":  "ready",
		"/metrics": `pistra_requests_total{code="200",provider="up-openai",route="chat_completions"} 1`,
	} {
		resp, err := http.Get("http://" + e.srv.PublicAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
	if !strings.Contains(e.logs.String(), `"pistra.channel_origin":"native"`) {
		t.Errorf("request log lacks pistra.channel_origin")
	}
}

// TestStartupRefusals: a policy naming a credential the environment lacks,
// or an admin API without a token, stops pistrad before it listens.
func TestStartupRefusals(t *testing.T) {
	g := compilePolicy(t, policy{OpenAI: "http://127.0.0.1:1/v1", Backup: "http://127.0.0.1:1/v1",
		Anthropic: "http://127.0.0.1:1/v1", Dead: "http://127.0.0.1:1/v1"})
	load := func() (*plan.Graph, string, error) { return g, "test", nil }
	tests := []struct {
		name  string
		env   map[string]string
		token string
		want  []string
	}{
		{"missing credential", map[string]string{"E2E_OPENAI_KEY": "x", "E2E_ANTHROPIC_KEY": "x"}, adminToken,
			[]string{`provider "backup-openai"`, "E2E_BACKUP_KEY"}},
		{"missing admin token", upstreamEnv, "", []string{"PISTRA_ADMIN_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := server.New(server.Options{
				PublicAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: tt.token, Load: load,
				LookupEnv: func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok },
				Logger:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
			})
			if err == nil {
				t.Fatal("server started")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestDrainReportsNotReadyAndKeepsServing: the drain step pistrad takes on
// SIGTERM before it stops accepting: /readyz says not ready so a load
// balancer moves new work away, while requests that still arrive are
// served.
func TestDrainReportsNotReadyAndKeepsServing(t *testing.T) {
	e := start(t)
	e.srv.Drain()
	resp, err := http.Get("http://" + e.srv.PublicAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d", resp.StatusCode)
	}
	client := e.openaiClient(keyDefault)
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("fast")); err != nil {
		t.Errorf("a request while draining: %v", err)
	}
}

// TestRequestLogLine: one structured line per request naming what the
// operator needs to follow it: the request id the client saw, the profile,
// the provider and upstream model that served, the claim's origin, the
// upstream's own request id, and never the client's key.
func TestRequestLogLine(t *testing.T) {
	e := start(t)
	client := e.openaiClient(keyDefault)
	var resp *http.Response
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("fast"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("Pistra-Request-Id")
	var rec map[string]any
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"request"`) && strings.Contains(line, id) {
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]any{
		"request_id": id, "route": "chat_completions", "model": "fast", "status": float64(200),
		"profile": "default", "provider": "up-openai", "upstream_model": "gpt-4o-mini",
		"pistra.channel_origin": resp.Header.Get("Pistra-Channel-Origin"), "attempts": float64(1),
		"upstream_request_id": resp.Header.Get("X-Request-Id"),
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("log %s = %v, want %v (line %v)", k, rec[k], v, rec)
		}
	}
	if id == "" || resp.Header.Get("X-Request-Id") == id {
		t.Errorf("request ids: ours %q, upstream's %q", id, resp.Header.Get("X-Request-Id"))
	}
}
