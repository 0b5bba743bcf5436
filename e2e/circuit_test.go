package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// circuitPolicy: up-openai opens after four failed attempts in a row and
// fails over to backup-openai; up-anthropic, with no failover, opens after
// two, after which each cools down for the time given.
func circuitPolicy(coolOpenAI, coolAnthropic string) fixture {
	return func(p policy) testkit.Policy {
		upOpenAI := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
		upOpenAI.Retries = retries(1, "5xx")
		upOpenAI.Timeout = "2s"
		upOpenAI.Failover = failover([]string{"backup-openai"}, "connect", "5xx", "429")
		upOpenAI.Circuit = &testkit.Circuit{Failures: 4, CoolDown: coolOpenAI}
		upAnthropic := anthropicProvider(p.Anthropic, 8192, "claude-haiku-4-5")
		upAnthropic.Circuit = &testkit.Circuit{Failures: 2, CoolDown: coolAnthropic}
		return testkit.Policy{
			Providers: map[string]testkit.Provider{"up-openai": upOpenAI,
				"backup-openai": openAIProvider(p.Backup, envBackup, "gpt-4o-mini"), "up-anthropic": upAnthropic},
			Primary:  map[string]string{"gpt-4o-mini": "up-openai"},
			Profiles: map[string]testkit.Profile{"default": {}},
			Keys:     []testkit.Key{clientKey("default", "default", keyDefault)},
		}
	}
}

func startCircuit(t *testing.T, coolOpenAI, coolAnthropic string) *env {
	t.Helper()
	return startWith(t, circuitPolicy(coolOpenAI, coolAnthropic))
}

// circuitRow is a breaker as /admin/v1/status shows it.
type circuitRow struct {
	Provider string     `json:"provider"`
	State    string     `json:"state"`
	Failures int64      `json:"consecutive_failures"`
	Since    *time.Time `json:"since"`
	RetryAt  *time.Time `json:"retry_at"`
}

func (e *env) circuit(provider string) circuitRow {
	e.t.Helper()
	resp := e.adminDo(http.MethodGet, "/admin/v1/status")
	defer resp.Body.Close()
	var st struct {
		Circuits []circuitRow `json:"circuits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		e.t.Fatal(err)
	}
	for _, c := range st.Circuits {
		if c.Provider == provider {
			return c
		}
	}
	e.t.Fatalf("status lists no circuit for %s: %+v", provider, st.Circuits)
	return circuitRow{}
}

// servedBy sends one chat request and returns the provider that served it.
func (e *env) servedBy(t *testing.T) string {
	t.Helper()
	var resp *http.Response
	client := e.openaiClient(keyDefault)
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	return resp.Header.Get("Pistra-Provider")
}

// preflightSkips asks /v1/preflight and the admin preflight for
// gpt-4o-mini and returns who would serve and the circuit_open skips.
func (e *env) preflightCircuit(t *testing.T) (serve string, skipped []string) {
	t.Helper()
	body := map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]string{"role": "user", "content": prompt}}}
	var answers [2]string
	for i, u := range []string{e.baseURL() + "preflight", "http://" + e.srv.AdminAddr() + "/admin/v1/preflight?key=default"} {
		h := http.Header{"Authorization": {"Bearer " + keyDefault}}
		if i == 1 {
			h.Set("Authorization", "Bearer "+adminToken)
		}
		status, b := e.preflight(u, h, body)
		a := decodeAnswer(t, status, b)
		var skips []string
		for _, s := range a.Skipped {
			if s.Reason == "circuit_open" {
				skips = append(skips, s.Provider+"/"+s.Channel)
			}
		}
		answers[i] = a.Serve.Provider + " " + strings.Join(skips, ",")
		serve, skipped = a.Serve.Provider, skips
	}
	if answers[0] != answers[1] {
		t.Errorf("preflight %q, admin preflight %q", answers[0], answers[1])
	}
	return serve, skipped
}

// TestCircuitOpensSkipsAndCloses: four failed attempts in a row open
// up-openai's circuit; it is then passed over untried (counted as
// circuit_open, shown in the status and in preflight) while backup-openai
// serves; after the cool-down one probe is let through, and its success
// closes the circuit. A failed probe opens it again at once.
func TestCircuitOpensSkipsAndCloses(t *testing.T) {
	e := startCircuit(t, "1500ms", "10s")
	skips := map[string]string{"provider": "up-openai", "reason": "circuit_open"}
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})

	for i := range 2 { // each request: the call, its retry, then the backup
		if by := e.servedBy(t); by != "backup-openai" {
			t.Fatalf("request %d served by %q", i, by)
		}
	}
	if n := e.openai.Calls(); n != 4 {
		t.Fatalf("up-openai saw %d calls before opening, want 4", n)
	}
	c := e.circuit("up-openai")
	if c.State != "open" || c.Failures != 4 || c.Since == nil || c.RetryAt == nil || c.RetryAt.Sub(*c.Since) != 1500*time.Millisecond {
		t.Fatalf("status after 4 failures: %+v", c)
	}
	if !strings.Contains(e.logs.String(), `"msg":"circuit open","provider":"up-openai"`) {
		t.Error("no log line for the circuit opening")
	}
	reg := e.srv.Metrics().Registry()
	if open, closed := testkit.Gauge(t, reg, "pistra_circuit_state", map[string]string{"provider": "up-openai"}),
		testkit.Gauge(t, reg, "pistra_circuit_state", map[string]string{"provider": "up-anthropic"}); open != 1 || closed != 0 {
		t.Errorf("pistra_circuit_state: up-openai %v, up-anthropic %v; want 1 (open) and 0 (closed)", open, closed)
	}

	// Open: passed over untried, and counted.
	if by := e.servedBy(t); by != "backup-openai" || e.openai.Calls() != 4 {
		t.Fatalf("open circuit: served by %q, up-openai saw %d calls (want 4)", by, e.openai.Calls())
	}
	if n := e.counter("pistra_failover_skipped_total", skips); n != 1 {
		t.Errorf("pistra_failover_skipped_total{circuit_open} = %v, want 1", n)
	}
	if n := e.counter("pistra_failover_total", map[string]string{"from": "up-openai", "to": "backup-openai"}); n != 2 {
		t.Errorf("pistra_failover_total %v, want 2 (an open circuit is a skip, not a failover)", n)
	}
	if serve, skipped := e.preflightCircuit(t); serve != "backup-openai" || strings.Join(skipped, ",") != "up-openai/native" {
		t.Errorf("preflight while open: serve %q, circuit_open skips %v", serve, skipped)
	}

	// Half-open after the cool-down: a failed probe opens it again.
	time.Sleep(time.Until(*c.RetryAt) + 50*time.Millisecond)
	if serve, skipped := e.preflightCircuit(t); serve != "up-openai" || len(skipped) != 0 {
		t.Errorf("preflight after the cool-down: serve %q, skips %v", serve, skipped)
	}
	if by := e.servedBy(t); by != "backup-openai" {
		t.Fatalf("failed probe: served by %q", by)
	}
	if n := e.openai.Calls(); n != 6 { // the probe and its retry
		t.Fatalf("up-openai saw %d calls after the probe, want 6", n)
	}
	reopened := e.circuit("up-openai")
	if reopened.State != "open" || !reopened.Since.After(*c.Since) {
		t.Fatalf("after a failed probe: %+v", reopened)
	}

	// A good probe closes it.
	e.setFaults(e.openai, fakeprovider.Faults{})
	time.Sleep(time.Until(*reopened.RetryAt) + 50*time.Millisecond)
	if by := e.servedBy(t); by != "up-openai" {
		t.Fatalf("good probe: served by %q", by)
	}
	if c := e.circuit("up-openai"); c.State != "closed" || c.Failures != 0 || c.RetryAt != nil {
		t.Fatalf("after a good probe: %+v", c)
	}
	if by := e.servedBy(t); by != "up-openai" || e.openai.Calls() != 8 {
		t.Fatalf("closed: served by %q, up-openai saw %d calls (want 8)", by, e.openai.Calls())
	}
	if n := e.counter("pistra_failover_skipped_total", skips); n != 1 {
		t.Errorf("pistra_failover_skipped_total{circuit_open} = %v, want still 1", n)
	}
}

// TestCircuitOpenPrimaryAlone: a provider with no failover whose circuit is
// open answers 503 circuit_open in the client's dialect, with retry-after
// the cool-down left and x-should-retry: true, without calling upstream; a
// reload keeps the state; an SDK allowed one retry waits as told, and its
// retry is the probe that closes the circuit.
func TestCircuitOpenPrimaryAlone(t *testing.T) {
	e := startCircuit(t, "10s", "1500ms")
	e.setFaults(e.anthropic, fakeprovider.Faults{FailStatus: 500})
	client := e.anthropicClient(keyDefault)
	for range 2 {
		_, err := client.Messages.New(context.Background(), messageParams("claude-haiku-4-5"))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
			t.Fatalf("want the upstream's 500, got %v", err)
		}
	}
	opened := e.circuit("up-anthropic")
	if opened.State != "open" {
		t.Fatalf("after 2 failures: %+v", opened)
	}
	if status := e.reload(); status != http.StatusOK {
		t.Fatalf("reload: %d", status)
	}
	if c := e.circuit("up-anthropic"); c.State != "open" || !c.Since.Equal(*opened.Since) {
		t.Fatalf("after a reload: %+v, want %+v", c, opened)
	}

	_, err := client.Messages.New(context.Background(), messageParams("claude-haiku-4-5"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("want 503, got %v", err)
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Details struct {
				Code string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil {
		t.Fatal(err)
	}
	h := apiErr.Response.Header
	if body.Error.Details.Code != "circuit_open" || !strings.Contains(body.Error.Message, `provider "up-anthropic"`) ||
		h.Get("Retry-After") != "2" || h.Get("X-Should-Retry") != "true" {
		t.Fatalf("503 %s with retry-after %q x-should-retry %q", apiErr.RawJSON(), h.Get("Retry-After"), h.Get("X-Should-Retry"))
	}
	if n := e.anthropic.Calls(); n != 2 {
		t.Fatalf("up-anthropic saw %d calls, want 2: an open circuit sends nothing", n)
	}
	if n := e.counter("pistra_failover_skipped_total", map[string]string{"provider": "up-anthropic", "reason": "circuit_open"}); n != 1 {
		t.Errorf("pistra_failover_skipped_total{circuit_open} = %v, want 1", n)
	}

	// The SDK, allowed a retry, waits the retry-after it was given; by then
	// the cool-down is over and its retry is the probe.
	e.setFaults(e.anthropic, fakeprovider.Faults{})
	started := time.Now()
	msg, err := client.Messages.New(context.Background(), messageParams("claude-haiku-4-5"), aoption.WithMaxRetries(1))
	if err != nil {
		t.Fatalf("the SDK's retry after the cool-down: %v", err)
	}
	if waited := time.Since(started); waited < time.Second || msg.Content[0].Text != fakeprovider.ReplyText(prompt) {
		t.Errorf("the SDK's answer after %v: %+v", waited, msg.Content)
	}
	if n := e.anthropic.Calls(); n != 3 {
		t.Errorf("up-anthropic saw %d calls, want 3 (the probe)", n)
	}
	if c := e.circuit("up-anthropic"); c.State != "closed" {
		t.Errorf("after the probe: %+v", c)
	}
}
