package e2e

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// excludedLastPolicy: up-openai fails over to backup-openai, then to
// spare-openai, which the profile's access rule always excludes: a
// failover policy that does not do what it reads.
func excludedLastPolicy(p policy) testkit.Policy {
	up := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
	up.Failover = failover([]string{"backup-openai", "spare-openai"}, "connect", "5xx")
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"up-openai": up,
			"backup-openai": openAIProvider(p.Backup, envBackup, "gpt-4o-mini"),
			"spare-openai":  openAIProvider(p.Dead, envBackup, "gpt-4o-mini")},
		Primary: map[string]string{"gpt-4o-mini": "up-openai"},
		Profiles: map[string]testkit.Profile{"default": {AccessRules: []testkit.Rule{
			{Name: "no-spare", When: `provider == "spare-openai"`, Code: "spare_excluded"}}}},
		Keys: []testkit.Key{clientKey("default", "default", keyDefault)},
	}
}

// TestLastExcludedFailoverTargetCounted: a failover target the profile
// always excludes, last in failover.to, is counted in
// pistra_failover_skipped_total with the rule's code each time a request
// goes past every candidate it had; not when a candidate before it serves.
func TestLastExcludedFailoverTargetCounted(t *testing.T) {
	e := startWith(t, excludedLastPolicy)
	skipped := map[string]string{"provider": "spare-openai", "reason": "spare_excluded"}
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})
	e.setFaults(e.backup, fakeprovider.Faults{FailStatus: 503})
	client := e.openaiClient(keyDefault)
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"), option.WithMaxRetries(0)); err == nil {
		t.Fatal("every candidate failing was served")
	}
	if n := e.counter("pistra_failover_skipped_total", skipped); n != 1 {
		t.Errorf("after a request that went past every candidate: %v, want 1", n)
	}
	e.setFaults(e.backup, fakeprovider.Faults{})
	var resp *http.Response
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if by := resp.Header.Get("Pistra-Provider"); by != "backup-openai" {
		t.Fatalf("served by %q", by)
	}
	if n := e.counter("pistra_failover_skipped_total", skipped); n != 1 {
		t.Errorf("after a request backup-openai served: %v, want still 1", n)
	}
}
