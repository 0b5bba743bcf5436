package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/a2atest"
)

// The A2A end to end: pistrad as a process in front of a real a2a-go
// agent, called by the a2a-go client.
const (
	a2aAgentKey  = "pk-e2e-a2a-agents"
	a2aPlainKey  = "pk-e2e-a2a-plain"
	envA2AAgent  = "E2E_A2A_AGENT_TOKEN"
	a2aAgentAuth = "a2a-agent-upstream-secret"
	// a2aCost is the agent's cost_per_call; the budget's own is 1.
	a2aCost = 2
	// a2aLimit fits seven calls at a2aCost.
	a2aLimit = 7 * a2aCost
)

// a2aPolicy serves agent "helper" at agentURL: key "agents" may reach it,
// its calls drawing on budget "calls"; key "plain" reaches no agent.
func a2aPolicy(t *testing.T, agentURL string) []byte {
	cost := uint64(a2aCost)
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"up-openai": openAIProvider("http://"+closedPort(t)+"/v1", envOpenAI, "gpt-4o-mini")},
		Agents:    map[string]testkit.Service{"helper": {URL: agentURL, CredentialEnv: envA2AAgent, CostPerCall: &cost}},
		Profiles:  map[string]testkit.Profile{"agents": {Agents: []string{"helper"}, AgentBudgets: []string{"calls"}}, "plain": {}},
		Keys:      []testkit.Key{clientKey("agents", "agents", a2aAgentKey), clientKey("plain", "plain", a2aPlainKey)},
		Budgets:   []testkit.Budget{dayBudget("calls", a2aLimit)},
	}.Source()
}

// startA2ADaemon runs pistrad on a bundle of a2aPolicy.
func startA2ADaemon(t *testing.T, agentURL string) *daemon {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.cue"), a2aPolicy(t, agentURL), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatalf("compile the A2A policy: %v", err)
	}
	bundlePath := filepath.Join(dir, "bundle.json")
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundlePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{envOpenAI + "=" + secretOpenAI, envA2AAgent + "=" + a2aAgentAuth, "PISTRA_ADMIN_TOKEN=" + adminToken}
	d := startDaemon(t, buildPistrad(t), env, "-bundle", bundlePath)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pistrad logs:\n%s", d.logs.String())
		}
	})
	return d
}

// a2aSpent waits until nothing is held on the agent key's bucket of
// "calls" and returns what it was charged.
func a2aSpent(t *testing.T, d *daemon) uint64 {
	t.Helper()
	var row bucketRow
	budgetWait(t, "the agent key's calls to settle", func() bool {
		r, err := fetchBudgets(d.admin)
		if err != nil {
			t.Fatal(err)
		}
		var ok bool
		row, ok = r.find("calls", "agents")
		return ok && row.Held == 0
	})
	return row.Spent
}

// a2aPost sends a raw JSON-RPC body to the gateway's agent with key.
func a2aPost(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestA2AThroughPistrad(t *testing.T) {
	agent := a2atest.Start(t)
	d := startA2ADaemon(t, agent.URL)
	base := "http://" + d.public + "/a2a/helper"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	client, card := a2atest.Discover(ctx, t, base, a2aAgentKey)
	if card.URL != base || len(card.AdditionalInterfaces) != 2 || card.AdditionalInterfaces[1].URL != base+"/rest" {
		t.Fatalf("the card through pistrad: url %q, interfaces %+v", card.URL, card.AdditionalInterfaces)
	}
	charged := func(want uint64, after string) {
		t.Helper()
		if got := a2aSpent(t, d); got != want*a2aCost {
			t.Fatalf("after %s: spent %d, want %d calls at %d", after, got, want, a2aCost)
		}
	}
	if _, err := client.SendMessage(ctx, a2atest.Say("echo hi")); err != nil {
		t.Fatal(err)
	}
	charged(1, "a send")
	task := agent.StreamWork(ctx, t, client)
	charged(2, "a stream")
	if got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task}); err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task read: %v, %v", got, err)
	}
	charged(3, "a task read")

	// A task that runs on and one that fails at once cost the same.
	go agent.Step(t)
	if res, err := client.SendMessage(ctx, a2atest.Say("work 1")); err != nil || res.(*a2a.Task).Status.State != a2a.TaskStateCompleted {
		t.Fatalf("long task: %v, %v", res, err)
	}
	charged(4, "a long task")
	if res, err := client.SendMessage(ctx, a2atest.Say("fail")); err != nil || res.(*a2a.Task).Status.State != a2a.TaskStateFailed {
		t.Fatalf("failing task: %v, %v", res, err)
	}
	charged(5, "a failing task")

	checkA2AV1AndFree(ctx, t, agent, base, client)
	charged(6, "a v1.0-named send, a cancel and the extended card")

	checkA2ARefusals(ctx, t, d, agent, base, client)
	checkA2ACredentials(t, agent, d)
}

// checkA2AV1AndFree makes one charged call, v1.0's name in raw JSON-RPC,
// and two free ones: a cancel (answered with the agent's error) and the
// extended card, whose URLs point at the gateway.
func checkA2AV1AndFree(ctx context.Context, t *testing.T, agent *a2atest.Agent, base string, client *a2aclient.Client) {
	t.Helper()
	status, body := a2aPost(t, base, a2aAgentKey, `{"jsonrpc":"2.0","id":"v1","method":"SendMessage","params":{"message":`+
		`{"role":"user","kind":"message","messageId":"m-v1","parts":[{"kind":"text","text":"echo v1"}]}}}`)
	if status != http.StatusOK || !strings.Contains(body, `"text":"v1"`) || agent.Calls("SendMessage") != 1 {
		t.Fatalf("SendMessage: %d %s", status, body)
	}
	if _, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: "no-such-task"}); err == nil {
		t.Fatal("cancelling a task that does not exist succeeded")
	}
	if ext, err := client.GetAgentCard(ctx); err != nil || ext.URL != base {
		t.Fatalf("extended card: %v, %v", ext, err)
	}
}

// checkA2ARefusals: a key whose profile has not the agent is refused
// before anything reaches it, and once the budget is spent the next call
// is refused unsent and uncharged.
func checkA2ARefusals(ctx context.Context, t *testing.T, d *daemon, agent *a2atest.Agent, base string, client *a2aclient.Client) {
	t.Helper()
	seen := len(agent.Seen())
	plain := a2atest.Connect(ctx, t, base, a2aPlainKey)
	if _, err := plain.SendMessage(ctx, a2atest.Say("echo no")); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a key without the agent: %v", err)
	}
	if status, body := a2aPost(t, base, a2aPlainKey, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`); status != http.StatusForbidden ||
		!strings.Contains(body, `"pistra_code":"service_not_allowed"`) {
		t.Fatalf("a key without the agent: %d %s", status, body)
	}
	if n := len(agent.Seen()); n != seen {
		t.Fatalf("the agent was sent %d requests of a key refused it", n-seen)
	}

	// Six calls are charged, the seventh fills the budget, the eighth is
	// refused.
	if _, err := client.SendMessage(ctx, a2atest.Say("echo last")); err != nil {
		t.Fatal(err)
	}
	if got := a2aSpent(t, d); got != a2aLimit {
		t.Fatalf("spent %d, want the limit %d", got, a2aLimit)
	}
	sends := agent.Calls("message/send")
	if _, err := client.SendMessage(ctx, a2atest.Say("echo over")); !errors.Is(err, a2a.ErrServerError) {
		t.Fatalf("a send over the budget: %v", err)
	}
	status, body := a2aPost(t, base, a2aAgentKey, `{"jsonrpc":"2.0","id":"over","method":"message/send","params":{}}`)
	if status != http.StatusOK || !strings.Contains(body, `"id":"over"`) || !strings.Contains(body, `"pistra_code":"budget_exceeded","status":429`) {
		t.Fatalf("a send over the budget: %d %s", status, body)
	}
	if agent.Calls("message/send") != sends || a2aSpent(t, d) != a2aLimit {
		t.Fatal("a call over the budget reached the agent or was charged")
	}
	// pistrad writes its log lines in batches: wait for the line.
	budgetWait(t, "a request line recording a charged call", func() bool {
		return strings.Contains(d.logs.String(), `"service":"helper","key":"agents","method":"SendMessage","calls":1,"budgets":"calls","charge":2`)
	})
}

// checkA2ACredentials: the agent got its own credential on every request
// and never a client's key; pistrad logged neither.
func checkA2ACredentials(t *testing.T, agent *a2atest.Agent, d *daemon) {
	t.Helper()
	for _, s := range agent.Seen() {
		if got := s.Header.Get("Authorization"); got != "Bearer "+a2aAgentAuth {
			t.Errorf("%s %s: Authorization %q", s.HTTPMethod, s.Path, got)
		}
		for k, vs := range s.Header {
			for _, v := range vs {
				if strings.Contains(v, a2aAgentKey) || strings.Contains(v, a2aPlainKey) {
					t.Errorf("%s %s: a client's key in %s", s.HTTPMethod, s.Path, k)
				}
			}
		}
	}
	if logs := d.logs.String(); strings.Contains(logs, a2aAgentAuth) || strings.Contains(logs, a2aAgentKey) {
		t.Error("a secret appears in pistrad's logs")
	}
}
