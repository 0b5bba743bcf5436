package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// keyRulesPolicy has access rules that read the key, which the build cannot
// fold into the plans: the intern's requests skip up-openai, the
// contractor's never fail over to backup-openai, the intern may not use
// Claude, and a deployment-wide rule shuts the blocked key out.
func keyRulesPolicy(p policy) testkit.Policy {
	twoSeconds := func(pr testkit.Provider) testkit.Provider { pr.Timeout = "2s"; return pr }
	upOpenAI := twoSeconds(openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini"))
	upOpenAI.Failover = failover([]string{"backup-openai"}, "connect", "5xx", "429")
	return testkit.Policy{
		Providers: map[string]testkit.Provider{
			"up-openai":     upOpenAI,
			"backup-openai": twoSeconds(openAIProvider(p.Backup, envBackup, "gpt-4o-mini")),
			"up-anthropic":  twoSeconds(anthropicProvider(p.Anthropic, 8192, "claude-haiku-4-5")),
		},
		Primary: map[string]string{"gpt-4o-mini": "up-openai"},
		AccessRules: []testkit.Rule{
			{Name: "blocked", When: "key == 'blocked'", Code: "key_blocked", Message: "this key is shut out"},
		},
		Profiles: map[string]testkit.Profile{"default": {AccessRules: []testkit.Rule{
			{Name: "interns-on-backup", When: "key == 'intern' && provider == 'up-openai'", Code: "intern_backup_only"},
			{Name: "contractors-on-primary", When: "key == 'contractor' && provider == 'backup-openai'", Code: "contractor_primary_only"},
			{Name: "interns-no-claude", When: "key == 'intern' && model == 'claude-haiku-4-5'", Code: "intern_limited",
				Message: "interns may not use Claude"},
		}}},
		Keys: []testkit.Key{
			clientKey("default", "default", keyDefault),
			clientKey("intern", "default", "sk-e2e-intern"),
			clientKey("contractor", "default", "sk-e2e-contractor"),
			clientKey("blocked", "default", "sk-e2e-blocked"),
		},
	}
}

// TestKeyRules: access rules that read the key are applied by the running
// gateway, per candidate, before anything is sent: a denied primary is
// passed over untried for the next candidate, a denied failover candidate
// is never dialled, and a request every candidate of which is denied gets
// the rule's own code and message in the caller's dialect; both
// preflights show the rule's skips.
func TestKeyRules(t *testing.T) {
	e := startWith(t, keyRulesPolicy)
	ctx := context.Background()
	served := func(key string) string {
		t.Helper()
		var resp *http.Response
		client := e.openaiClient(key)
		if _, err := client.Chat.Completions.New(ctx, chatParams("gpt-4o-mini"), option.WithResponseInto(&resp)); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return resp.Header.Get("Pistra-Provider")
	}
	if p := served("sk-e2e-default"); p != "up-openai" {
		t.Errorf("default key served by %q, want up-openai", p)
	}
	if p := served("sk-e2e-intern"); p != "backup-openai" {
		t.Errorf("intern served by %q, want backup-openai (the rule passes up-openai over)", p)
	}
	if n := e.openai.Calls(); n != 1 {
		t.Errorf("up-openai saw %d calls, want 1: the intern's request must not reach it", n)
	}

	// The contractor's failover target is denied: up-openai's failure is
	// the answer and backup-openai is never dialled.
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})
	backupBefore := e.backup.Calls()
	contractor := e.openaiClient("sk-e2e-contractor", option.WithMaxRetries(0))
	_, err := contractor.Chat.Completions.New(ctx, chatParams("gpt-4o-mini"))
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("contractor with up-openai failing: %v, want its 503", err)
	}
	if n := e.backup.Calls() - backupBefore; n != 0 {
		t.Errorf("backup-openai saw %d calls from the contractor, want 0", n)
	}
	if p := served("sk-e2e-intern"); p != "backup-openai" {
		t.Errorf("intern with up-openai failing served by %q", p)
	}
	e.setFaults(e.openai, fakeprovider.Faults{})

	// Every candidate denied: the rule's code and message, in each dialect.
	blocked := e.openaiClient("sk-e2e-blocked")
	_, err = blocked.Chat.Completions.New(ctx, chatParams("gpt-4o-mini"))
	if !errors.As(err, &oerr) || oerr.StatusCode != http.StatusForbidden || oerr.Code != "key_blocked" ||
		!strings.Contains(oerr.Message, "this key is shut out") {
		t.Fatalf("blocked key: %v, want 403 key_blocked with the rule's message", err)
	}
	intern := e.anthropicClient("sk-e2e-intern")
	_, err = intern.Messages.New(ctx, messageParams("claude-haiku-4-5"))
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != http.StatusForbidden {
		t.Fatalf("intern asking for Claude: %v, want 403", err)
	}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Pistra  struct {
				Code string `json:"code"`
			} `json:"pistra"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(aerr.RawJSON()), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Type != "permission_error" || !strings.Contains(body.Error.Message, "interns may not use Claude") {
		t.Errorf("intern asking for Claude: %s", aerr.RawJSON())
	}
	if n := e.anthropic.Calls(); n != 0 {
		t.Errorf("up-anthropic saw %d calls, want 0", n)
	}
	if !strings.Contains(aerr.RawJSON(), "intern_limited") {
		t.Errorf("the refusal does not carry the rule's code: %s", aerr.RawJSON())
	}

	// Both preflights answer as the request did.
	body2 := map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]string{"role": "user", "content": prompt}}}
	status, b := e.preflight(e.baseURL()+"preflight", http.Header{"Authorization": {"Bearer sk-e2e-intern"}}, body2)
	a := decodeAnswer(t, status, b)
	adminStatus, ab := e.preflight("http://"+e.srv.AdminAddr()+"/admin/v1/preflight?key=intern",
		http.Header{"Authorization": {"Bearer " + adminToken}}, body2)
	admin := decodeAnswer(t, adminStatus, ab)
	for who, ans := range map[string]struct {
		status int
		serve  string
		skips  []string
	}{"preflight": {status, a.Serve.Provider, reasons(a)}, "admin preflight": {adminStatus, admin.Serve.Provider, reasons(admin)}} {
		if ans.status != http.StatusOK || ans.serve != "backup-openai" || !strings.Contains(strings.Join(ans.skips, ","), "up-openai:intern_backup_only") {
			t.Errorf("%s for the intern: %d serve %q skips %v", who, ans.status, ans.serve, ans.skips)
		}
	}
}

// reasons lists a preflight answer's skips as provider:reason.
func reasons(a testkit.Preflight) []string {
	var out []string
	for _, s := range a.Skipped {
		out = append(out, s.Provider+":"+s.Reason)
	}
	return out
}
