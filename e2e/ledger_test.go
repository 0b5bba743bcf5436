package e2e

import (
	"context"
	"encoding/json"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/ledger"
	"github.com/pistra/pistra/runtime/server"
	"github.com/pistra/pistra/runtime/suspend"
)

// startWithLedger serves defaultPolicy with budgets and suspensions kept
// in a real single-node raft ledger on disk, opened in dir.
func startWithLedger(t *testing.T, dir string) (*env, *ledger.Node) {
	t.Helper()
	node, err := ledger.Open(ledger.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-node.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the ledger did not replay its directory")
	}
	e := startWithOptions(t, defaultPolicy, func(o *server.Options) {
		o.Ledger, o.Suspensions, o.LedgerHealth = node, node, node
	})
	t.Cleanup(func() { e.stop(); node.Shutdown() })
	return e, node
}

// adminJSON sends an admin request with a JSON body and decodes the answer.
func (e *env) adminJSON(method, path, body string, into any) int {
	e.t.Helper()
	req, _ := http.NewRequest(method, "http://"+e.srv.AdminAddr()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			e.t.Fatalf("%s %s: %s (%v)", method, path, b, err)
		}
	}
	return resp.StatusCode
}

// waitLeader waits, bounded, for the ledger to have a leader, so writes
// through it succeed.
func waitLeader(t *testing.T, node *ledger.Node) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st := node.Status(ctx)
		cancel()
		if st.Leader != "" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the ledger elected no leader")
}

// TestSuspensions: a suspended key is refused 403 key_suspended; a
// suspended primary provider refuses the request 503 provider_suspended
// rather than failing over; a suspended failover candidate is passed over
// and counted; suspending what the policy does not declare is a 400
// naming what it does; clearing lifts it; and it is all in the ledger, so
// it survives a restart on the same directory.
func TestSuspensions(t *testing.T) {
	dir := t.TempDir()
	e, node := startWithLedger(t, dir)
	waitLeader(t, node)
	ctx := context.Background()

	if code := e.adminJSON("POST", "/admin/v1/suspensions", `{"kind":"key","name":"ghost","reason":"x"}`, nil); code != 400 {
		t.Errorf("an undeclared key: %d, want 400", code)
	}
	var bad struct{ Error string }
	if code := e.adminJSON("POST", "/admin/v1/suspensions", `{"kind":"model","name":"x"}`, &bad); code != 400 ||
		!strings.Contains(bad.Error, "key, provider, rule") {
		t.Errorf("an unknown kind: %d %q", code, bad.Error)
	}

	if code := e.adminJSON("POST", "/admin/v1/suspensions", `{"kind":"key","name":"limited","reason":"leaked in a log"}`, nil); code != 200 {
		t.Fatalf("suspend key: %d", code)
	}
	_, err := oc(e, keyLimited).Chat.Completions.New(ctx, chatParams("gpt-4o-mini"))
	if apiErr := wantOpenAIError(t, err, 403, "key_suspended"); !strings.Contains(apiErr.Message, "leaked in a log") {
		t.Errorf("message %q", apiErr.Message)
	}
	_, err = ac(e, keyLimited).Messages.New(ctx, messageParams("claude-haiku-4-5"))
	wantAnthropicError(t, err, 403, "key_suspended")
	if _, err := oc(e, keyDefault).Chat.Completions.New(ctx, chatParams("gpt-4o-mini")); err != nil {
		t.Fatalf("another key was refused: %v", err)
	}

	if code := e.adminJSON("POST", "/admin/v1/suspensions", `{"kind":"provider","name":"up-openai","reason":"incident 42"}`, nil); code != 200 {
		t.Fatalf("suspend provider: %d", code)
	}
	before := e.openai.Calls() + e.backup.Calls()
	_, err = oc(e, keyDefault).Chat.Completions.New(ctx, chatParams("gpt-4o-mini"))
	if apiErr := wantOpenAIError(t, err, 503, "provider_suspended"); !strings.Contains(apiErr.Message, "incident 42") ||
		apiErr.Response.Header.Get("X-Should-Retry") != "false" {
		// A suspension stands until lifted: the SDK is told not to retry.
		t.Errorf("message %q, x-should-retry %q", apiErr.Message, apiErr.Response.Header.Get("X-Should-Retry"))
	}
	if n := e.openai.Calls() + e.backup.Calls() - before; n != 0 {
		t.Errorf("a request to a suspended primary reached %d upstreams; it must not fail over", n)
	}
	var refusal struct{ Error struct{ Code string } }
	if code := e.adminJSON("POST", "/admin/v1/preflight?key=default", `{"model":"gpt-4o-mini","messages":[]}`, &refusal); code != 503 ||
		refusal.Error.Code != "provider_suspended" {
		t.Errorf("preflight with the primary suspended: %d %+v", code, refusal)
	}
	if code := e.adminJSON("DELETE", "/admin/v1/suspensions/provider/up-openai", "", nil); code != 200 {
		t.Fatalf("unsuspend: %d", code)
	}

	// The failover candidate suspended: flaky's primary (dead) fails, and
	// backup-openai is passed over.
	if code := e.adminJSON("POST", "/admin/v1/suspensions", `{"kind":"provider","name":"backup-openai","reason":"drain"}`, nil); code != 200 {
		t.Fatal(code)
	}
	_, err = oc(e, keyDefault).Chat.Completions.New(ctx, chatParams("flaky"))
	wantOpenAIError(t, err, 502, "upstream_unreachable")
	if n := e.counter("pistra_failover_skipped_total", map[string]string{"provider": "backup-openai", "reason": "provider_suspended"}); n != 1 {
		t.Errorf("skipped %v, want 1", n)
	}

	var pre struct {
		Skipped []struct{ Provider, Reason string }
	}
	if code := e.adminJSON("POST", "/admin/v1/preflight?key=default", `{"model":"flaky","messages":[]}`, &pre); code != 200 ||
		!slices.ContainsFunc(pre.Skipped, func(s struct{ Provider, Reason string }) bool {
			return s.Provider == "backup-openai" && s.Reason == "provider_suspended"
		}) {
		t.Errorf("preflight with the failover candidate suspended: %d %+v", code, pre)
	}

	var list struct{ Suspensions []suspend.Suspension }
	if e.adminJSON("GET", "/admin/v1/suspensions", "", &list); len(list.Suspensions) != 2 {
		t.Fatalf("suspensions %+v", list.Suspensions)
	}

	// A restart on the same directory keeps them.
	e.stop()
	node.Shutdown()
	e2, node2 := startWithLedger(t, dir)
	waitLeader(t, node2)
	_, err = oc(e2, keyLimited).Chat.Completions.New(ctx, chatParams("gpt-4o-mini"))
	wantOpenAIError(t, err, 403, "key_suspended")
	var st struct {
		Ledger *admin.LedgerStatus
	}
	if e2.adminJSON("GET", "/admin/v1/status", "", &st); st.Ledger == nil || st.Ledger.Leader == "" || !st.Ledger.Ready {
		t.Errorf("status ledger %+v", st.Ledger)
	}
}

// TestBudgetOnTheRaftLedger: spend settled on a gateway reaches its ledger
// at the next flush, and a restart on the same directory reads it back.
func TestBudgetOnTheRaftLedger(t *testing.T) {
	dir := t.TempDir()
	raftDay := func(p policy) testkit.Policy {
		pol := defaultPolicy(p)
		pol.Profiles["metered"] = testkit.Profile{RequireCaps: []string{"usage_details"}, Budgets: []string{"raft-day"}}
		budget := dayBudget("raft-day", 1000000)
		budget.Per = "key"
		pol.Budgets = []testkit.Budget{budget}
		return pol
	}
	open := func() (*env, *ledger.Node) {
		node, err := ledger.Open(ledger.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		waitLeader(t, node)
		e := startWithOptions(t, raftDay, func(o *server.Options) { o.Ledger, o.LedgerHealth = node, node })
		return e, node
	}
	e, node := open()
	chat, err := oc(e, keyMetered).Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	spent := func(e *env) uint64 {
		var rep struct {
			Buckets []struct{ Spent, Held uint64 }
		}
		e.adminJSON("GET", "/admin/v1/budgets", "", &rep)
		if len(rep.Buckets) != 1 {
			return 0
		}
		return rep.Buckets[0].Spent
	}
	if got := spent(e); got != uint64(chat.Usage.TotalTokens) {
		t.Fatalf("spent %d, want %d", got, chat.Usage.TotalTokens)
	}
	e.stop() // its last flush reaches the ledger
	node.Shutdown()

	e, node = open()
	defer node.Shutdown()
	defer e.stop()
	// Before any request: the bucket and the usage row the ledger holds
	// are listed.
	if got := spent(e); got != uint64(chat.Usage.TotalTokens) {
		t.Errorf("right after a restart spent %d, want %d", got, chat.Usage.TotalTokens)
	}
	var usage usageAnswer
	e.adminJSON("GET", "/admin/v1/usage?day="+time.Now().UTC().Format(time.DateOnly), "", &usage)
	if r := usage.Rows; len(r) != 1 || r[0].Requests != 1 || r[0].InputTokens != uint64(chat.Usage.PromptTokens) || r[0].OutputTokens != uint64(chat.Usage.CompletionTokens) {
		t.Errorf("right after a restart usage %+v, want one request of %d in, %d out", r, chat.Usage.PromptTokens, chat.Usage.CompletionTokens)
	}
	// A fresh bucket reads its total from the ledger on first use.
	if _, err := oc(e, keyMetered).Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini")); err != nil {
		t.Fatal(err)
	}
	if got := spent(e); got != 2*uint64(chat.Usage.TotalTokens) {
		t.Errorf("after a restart spent %d, want %d (the first run's spend kept)", got, 2*chat.Usage.TotalTokens)
	}
}

// oc and ac are addressable SDK clients of e's gateway for key.
func oc(e *env, key string) *openai.Client {
	c := e.openaiClient(key)
	return &c
}

func ac(e *env, key string) *anthropic.Client {
	c := e.anthropicClient(key)
	return &c
}
