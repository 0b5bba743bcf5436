package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// meteredKey is the default policy's key on its metered profile
// (policies/policy.cue), named metered-dev there.
const meteredKey = "sk-pistra-metered"

// TestDefaultPolicyDevMinuteBudget: the default policy's metered key draws
// on dev-minute, 3000 tokens a minute per key. A request stating 4000
// output tokens is held at more than that, so it is refused 429
// budget_exceeded in both dialects, naming dev-minute, before any provider
// is called, and the team-daily hold taken before it is given back. A
// small request on the same key is served.
func TestDefaultPolicyDevMinuteBudget(t *testing.T) {
	e := startDefaultPolicy(t)
	ctx := context.Background()
	oc, ac := e.openaiClient(meteredKey), e.anthropicClient(meteredKey)

	p := chatParams("gpt-4o-mini")
	p.MaxCompletionTokens = openai.Int(4000)
	_, err := oc.Chat.Completions.New(ctx, p)
	oerr := wantOpenAIError(t, err, http.StatusTooManyRequests, "budget_exceeded")
	checkDevMinuteRefusal(t, "OpenAI", oerr.Message, oerr.Response.Header)

	m := messageParams("claude-haiku-4-5")
	m.MaxTokens = 4000
	_, err = ac.Messages.New(ctx, m)
	aerr := wantAnthropicError(t, err, http.StatusTooManyRequests, "budget_exceeded")
	if aerr.Type() != "rate_limit_error" {
		t.Errorf("Anthropic error type %q, want rate_limit_error", aerr.Type())
	}
	checkDevMinuteRefusal(t, "Anthropic", aerr.Message, aerr.Response.Header)

	if e.openai.Calls() != 0 || e.anthropic.Calls() != 0 {
		t.Errorf("a refused request reached a provider: %d and %d calls", e.openai.Calls(), e.anthropic.Calls())
	}
	for _, budget := range []string{"team-daily", "dev-minute"} {
		if row, ok := e.budgetRow(budget, "metered-dev"); !ok || row.Spent != 0 || row.Held != 0 {
			t.Errorf("%s after two refusals: %+v (found %v), want nothing spent or held", budget, row, ok)
		}
	}
	if n := e.budgetCounter("pistra_auth_failures_total", map[string]string{"reason": "budget_exceeded"}); n != 2 {
		t.Errorf("%v budget refusals counted, want 2", n)
	}

	got, err := oc.Chat.Completions.New(ctx, chatParams("gpt-4o-mini"))
	if err != nil {
		t.Fatalf("a small request on the metered key: %v", err)
	}
	for _, budget := range []string{"team-daily", "dev-minute"} {
		if row := e.settledRow(budget, "metered-dev"); row.Spent != uint64(got.Usage.TotalTokens) {
			t.Errorf("%s spent %d, want the %d tokens the answer reported", budget, row.Spent, got.Usage.TotalTokens)
		}
	}
}

// checkDevMinuteRefusal checks a refusal names dev-minute and says the
// request is larger than it, and that its retry-after is within a minute,
// so x-should-retry is not sent.
func checkDevMinuteRefusal(t *testing.T, dialect, message string, h http.Header) {
	t.Helper()
	if !strings.Contains(message, `"dev-minute"`) || !strings.Contains(message, "cannot hold it at all") {
		t.Errorf("%s refusal %q: want it to name dev-minute and say the request alone is over it", dialect, message)
	}
	// A request larger than the whole limit can never fit: the SDKs are
	// told not to retry it, whatever the reset.
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || ra > 60 || h.Get("X-Should-Retry") != "false" {
		t.Errorf("%s refusal: retry-after %q, x-should-retry %q; want 1..60 seconds and x-should-retry false",
			dialect, h.Get("Retry-After"), h.Get("X-Should-Retry"))
	}
}
