package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// budgetWeightPolicy prices gpt-4o's output at four times gpt-3.5-turbo's,
// both served by one fake.
func budgetWeightPolicy(p policy) testkit.Policy {
	up := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o", "gpt-3.5-turbo")
	up.Aliases = map[string]string{"heavy": "gpt-4o"}
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"up-openai": up},
		Profiles:  map[string]testkit.Profile{"weighted": {Budgets: []string{"weighted"}}},
		Keys:      []testkit.Key{clientKey("weigher", "weighted", "sk-e2e-weigher")},
		Budgets: []testkit.Budget{{Name: "weighted", Limit: 2000, Window: "day", Cost: testkit.Cost{Type: "CEL",
			CEL: `model.startsWith("gpt-4o") ? input_tokens + output_tokens * 4u : input_tokens + output_tokens`}}},
	}
}

// weighted is what the policy's expression charges model for usage u.
func weighted(model string, u openai.CompletionUsage) uint64 {
	if strings.HasPrefix(model, "gpt-4o") {
		return uint64(u.PromptTokens + u.CompletionTokens*4)
	}
	return uint64(u.PromptTokens + u.CompletionTokens)
}

// TestBudgetCELWeightsModels: a CEL cost weighting one model above
// another charges each answer its model's weight of the usage the
// provider reported (an alias at the weight of the model it names), and
// holds at that weight too: a request the light model's hold fits is
// refused for the heavy one.
func TestBudgetCELWeightsModels(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	e := startWith(t, budgetWeightPolicy)
	client := e.openaiClient("sk-e2e-weigher")
	ask := func(model string, maxTokens int64) (*openai.ChatCompletion, error) {
		p := chatParams(model)
		p.MaxCompletionTokens = openai.Int(maxTokens)
		return client.Chat.Completions.New(context.Background(), p)
	}

	var want uint64
	for _, requested := range []string{"gpt-3.5-turbo", "gpt-4o", "heavy"} {
		got, err := ask(requested, 100)
		if err != nil {
			t.Fatalf("%s: %v", requested, err)
		}
		model := lastCall(t, e.openai).Model
		if got.Usage.CompletionTokens == 0 || model != strings.Replace(requested, "heavy", "gpt-4o", 1) {
			t.Fatalf("%s: usage %+v, upstream model %q", requested, got.Usage, model)
		}
		want += weighted(model, got.Usage)
		if row := e.settledRow("weighted", "weigher"); row.Spent != want {
			t.Fatalf("spent %d after %s, want %d: the reported usage at each upstream model's weight", row.Spent, requested, want)
		}
	}
	row := e.settledRow("weighted", "weigher")

	// A max_tokens whose fourfold is more than the room left, and whose
	// onefold is well within it: the hold for gpt-4o cannot fit, the one
	// for gpt-3.5-turbo can (the body's own few dozen tokens aside).
	room := row.Limit - row.Spent
	maxTokens := int64(room/4 + 20)
	_, err := ask("gpt-4o", maxTokens)
	if apiErr := wantOpenAIError(t, err, http.StatusTooManyRequests, "budget_exceeded"); !strings.Contains(apiErr.Message, `"weighted"`) {
		t.Errorf("refusal %q does not name the budget", apiErr.Message)
	}
	calls := e.openai.Calls()
	light, err := ask("gpt-3.5-turbo", maxTokens)
	if err != nil {
		t.Fatalf("gpt-3.5-turbo with max_tokens %d, %d tokens of room: %v", maxTokens, room, err)
	}
	if e.openai.Calls() != calls+1 || calls != 3 {
		t.Errorf("the provider saw %d calls before the light request and %d after: the refused one reached it", calls, e.openai.Calls())
	}
	want += weighted("gpt-3.5-turbo", light.Usage)
	if row := e.settledRow("weighted", "weigher"); row.Spent != want {
		t.Errorf("spent %d, want %d: the refusal took nothing, the light request its usage", row.Spent, want)
	}
}

// budgetBackendPolicy prices whatever the primary provider serves at a
// hundred times what its fallback does.
func budgetBackendPolicy(p policy) testkit.Policy {
	primary := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
	primary.Failover = failover([]string{"fallback"}, "5xx")
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"primary": primary, "fallback": openAIProvider(p.Backup, envBackup, "gpt-4o-mini")},
		Primary:   map[string]string{"gpt-4o-mini": "primary"},
		Profiles: map[string]testkit.Profile{
			"costly": {Budgets: []string{"by-backend"}},
			"plain":  {Budgets: []string{"tokens"}},
		},
		Keys: []testkit.Key{clientKey("costly", "costly", "sk-e2e-costly"), clientKey("plain", "plain", "sk-e2e-plain")},
		Budgets: []testkit.Budget{{Name: "by-backend", Limit: 10000, Window: "day", Cost: testkit.Cost{Type: "CEL",
			CEL: `backend == "primary" ? (input_tokens + output_tokens) * 100u : input_tokens + output_tokens`}},
			dayBudget("tokens", 10000)},
	}
}

// TestBudgetFailsOverPastBudget: the primary provider is healthy, but the
// budget prices it so that its hold (about 1050 tokens, times 100) cannot
// fit while the fallback's can. The primary is passed over untried and
// counted; the fallback serves, and the spend is its usage at its price.
func TestBudgetFailsOverPastBudget(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	e := startWith(t, budgetBackendPolicy)
	client := e.openaiClient("sk-e2e-costly")
	var resp *http.Response
	got, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Header.Get("Pistra-Provider"); p != "fallback" {
		t.Errorf("served by %q, want fallback", p)
	}
	if e.openai.Calls() != 0 || e.backup.Calls() != 1 {
		t.Errorf("calls: primary %d, fallback %d; want 0 and 1", e.openai.Calls(), e.backup.Calls())
	}
	for provider, want := range map[string]float64{"primary": 1, "fallback": 0} {
		if n := e.budgetCounter("pistra_failover_skipped_total", map[string]string{"provider": provider, "reason": "budget_exceeded"}); n != want {
			t.Errorf("pistra_failover_skipped_total{provider=%q,reason=budget_exceeded} = %v, want %v", provider, n, want)
		}
	}
	if n := e.budgetCounter("pistra_auth_failures_total", map[string]string{"reason": "budget_exceeded"}); n != 0 {
		t.Errorf("a served request counted %v budget refusals", n)
	}
	if row := e.settledRow("by-backend", "costly"); row.Spent != uint64(got.Usage.TotalTokens) {
		t.Errorf("spent %d, want the fallback's %d tokens at its own price", row.Spent, got.Usage.TotalTokens)
	}
}

// TestBudgetFailoverMovesTheHold: a primary that is tried and fails (503)
// gives its hold back before the fallback's is taken; the fallback's
// answer is all that is spent, and nothing stays held.
func TestBudgetFailoverMovesTheHold(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	e := startWith(t, budgetBackendPolicy)
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: http.StatusServiceUnavailable})
	client := e.openaiClient("sk-e2e-plain")
	var resp *http.Response
	got, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Header.Get("Pistra-Provider"); p != "fallback" || e.openai.Calls() != 1 || e.backup.Calls() != 1 {
		t.Errorf("served by %q after %d primary and %d fallback calls, want fallback after one each", p, e.openai.Calls(), e.backup.Calls())
	}
	if row := e.settledRow("tokens", "plain"); row.Spent != uint64(got.Usage.TotalTokens) {
		t.Errorf("spent %d, want only the fallback's %d tokens", row.Spent, got.Usage.TotalTokens)
	}
	if n := e.budgetCounter("pistra_failover_skipped_total", map[string]string{"reason": "budget_exceeded"}); n != 0 {
		t.Errorf("%v candidates passed over for budget, want none", n)
	}
}
