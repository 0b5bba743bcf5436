package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/testkit"
)

// budgetSDKPolicy gives each dialect two keys, one drawing on a budget
// that resets every minute and one on a budget that resets every day, of
// 1000 tokens each.
func budgetSDKPolicy(p policy) testkit.Policy {
	return testkit.Policy{
		Providers: twoNativeProviders(p),
		Profiles: map[string]testkit.Profile{
			"per-minute": {Budgets: []string{"minute-cap"}},
			"per-day":    {Budgets: []string{"day-cap"}},
		},
		Keys: []testkit.Key{
			clientKey("openai-minute", "per-minute", "sk-e2e-openai-minute"),
			clientKey("openai-day", "per-day", "sk-e2e-openai-day"),
			clientKey("anthropic-minute", "per-minute", "sk-e2e-anthropic-minute"),
			clientKey("anthropic-day", "per-day", "sk-e2e-anthropic-day"),
		},
		Budgets: []testkit.Budget{
			{Name: "minute-cap", Limit: 1000, Window: "minute", Cost: testkit.Cost{Type: "TotalToken"}},
			dayBudget("day-cap", 1000),
		},
	}
}

// sdkDefaultRetries is what both SDKs retry by default.
const sdkDefaultRetries = 2

// longPrompt is 3200 bytes of text: about 800 prompt tokens as the fake
// counts them, so one request spends most of a 1000-token budget.
var longPrompt = strings.Repeat("word ", 640)

// Token limits: spending asks for little output; the refused request asks
// for more than the 1000 - ~815 the spend leaves, but less than the whole
// limit, so it is refused for want of room rather than for its size.
const (
	spendMaxTokens  = 50
	refuseMaxTokens = 300
)

// sdkAttempt is one HTTP attempt an SDK made, as its middleware saw it.
type sdkAttempt struct {
	sent, answered          time.Time
	status                  int
	retryAfter, shouldRetry string
}

// attemptLog is a middleware for either SDK recording each attempt.
type attemptLog struct {
	mu   sync.Mutex
	list []sdkAttempt
}

func (l *attemptLog) record(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	a := sdkAttempt{sent: time.Now()}
	resp, err := next(req)
	a.answered = time.Now()
	if resp != nil {
		a.status = resp.StatusCode
		a.retryAfter, a.shouldRetry = resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry")
		// The gateway's retry-after is its window's reset, up to a minute
		// away here, and the SDKs wait what it says. Retry-After-Ms, which
		// both read first, makes the wait a millisecond; whether they retry
		// at all is still theirs to decide, from the status and
		// x-should-retry.
		resp.Header.Set("Retry-After-Ms", "1")
	}
	l.mu.Lock()
	l.list = append(l.list, a)
	l.mu.Unlock()
	return resp, err
}

func (l *attemptLog) attempts() []sdkAttempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sdkAttempt(nil), l.list...)
}

// sdkBudgetCase is one dialect's way to spend and to be refused.
type sdkBudgetCase struct {
	route string // the pistra_requests_total route label
	// spend makes a request that fits and returns the tokens the answer
	// reported; refused makes one that does not, with an SDK client on its
	// default retries, and returns the SDK's error.
	spend   func(t *testing.T, e *env, key string) uint64
	refused func(t *testing.T, e *env, key string, log *attemptLog) error
	// check checks the error is the SDK's own rate-limit error.
	check func(t *testing.T, err error) (message string)
}

var sdkBudgetCases = map[string]sdkBudgetCase{
	"openai": {
		route: "chat_completions",
		spend: func(t *testing.T, e *env, key string) uint64 {
			client := e.openaiClient(key)
			p := chatParams("gpt-4o-mini")
			p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage(longPrompt)}
			p.MaxCompletionTokens = openai.Int(spendMaxTokens)
			got, err := client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("the spending request: %v", err)
			}
			return uint64(got.Usage.TotalTokens)
		},
		refused: func(t *testing.T, e *env, key string, log *attemptLog) error {
			// Not sdkclient's: that one makes no retries.
			client := openai.NewClient(option.WithBaseURL(e.baseURL()), option.WithAPIKey(key),
				option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
					return log.record(r, next)
				}))
			p := chatParams("gpt-4o-mini")
			p.MaxCompletionTokens = openai.Int(refuseMaxTokens)
			_, err := client.Chat.Completions.New(context.Background(), p)
			return err
		},
		check: func(t *testing.T, err error) string {
			return wantOpenAIError(t, err, http.StatusTooManyRequests, "budget_exceeded").Message
		},
	},
	"anthropic": {
		route: "messages",
		spend: func(t *testing.T, e *env, key string) uint64 {
			client := e.anthropicClient(key)
			p := messageParams("claude-haiku-4-5")
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(longPrompt))}
			p.MaxTokens = spendMaxTokens
			got, err := client.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatalf("the spending request: %v", err)
			}
			return uint64(got.Usage.InputTokens + got.Usage.CacheCreationInputTokens + got.Usage.CacheReadInputTokens + got.Usage.OutputTokens)
		},
		refused: func(t *testing.T, e *env, key string, log *attemptLog) error {
			origin := strings.TrimSuffix(e.baseURL(), "v1/")
			client := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(origin), aoption.WithAPIKey(key),
				aoption.WithMiddleware(func(r *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
					return log.record(r, next)
				}))
			p := messageParams("claude-haiku-4-5")
			p.MaxTokens = refuseMaxTokens
			_, err := client.Messages.New(context.Background(), p)
			return err
		},
		check: func(t *testing.T, err error) string {
			apiErr := wantAnthropicError(t, err, http.StatusTooManyRequests, "budget_exceeded")
			if apiErr.Type() != "rate_limit_error" {
				t.Errorf("error type %q, want rate_limit_error: %s", apiErr.Type(), apiErr.RawJSON())
			}
			return apiErr.Message
		},
	},
}

// TestBudgetExhaustedThroughSDKs: once a request has spent most of a
// budget, the next one that does not fit reaches each SDK as its own
// rate-limit error, 429 budget_exceeded, naming the budget, with
// retry-after the seconds to the window's reset. The SDKs, on their
// default retries, try a minute window's refusal 1 + 2 times and stop; a
// day window's reset is more than a minute away, so x-should-retry: false
// stops them after the first, and pistrad sees exactly one request.
func TestBudgetExhaustedThroughSDKs(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	e := startWith(t, budgetSDKPolicy)
	for _, dialect := range []string{"openai", "anthropic"} {
		for _, window := range []string{"minute", "day"} {
			t.Run(dialect+"/"+window, func(t *testing.T) {
				checkSDKExhaustion(t, e, sdkBudgetCases[dialect], dialect+"-"+window, window)
			})
		}
	}

	// day-cap has two buckets now, one per key, the OpenAI one made fuller
	// by one more small request: the budget's ratio is the fuller one's,
	// not their average, and both are under the limit.
	client := e.openaiClient("sk-e2e-openai-day")
	small := chatParams("gpt-4o-mini")
	small.MaxCompletionTokens = openai.Int(20)
	if _, err := client.Chat.Completions.New(context.Background(), small); err != nil {
		t.Fatalf("a small request in what is left of day-cap: %v", err)
	}
	e.settledRow("day-cap", "openai-day")
	var worst float64
	for _, key := range []string{"openai-day", "anthropic-day"} {
		row, ok := e.budgetRow("day-cap", key)
		if !ok {
			t.Fatalf("no day-cap bucket for %s", key)
		}
		worst = max(worst, float64(row.Spent+row.Held)/float64(row.Limit))
	}
	budgetWait(t, "pistra_budget_used_ratio{budget=day-cap} to be its fullest bucket's", func() bool {
		return e.budgetGauge("pistra_budget_used_ratio", map[string]string{"budget": "day-cap"}) == worst
	})
	under := e.budgetGauge("pistra_budget_buckets", map[string]string{"budget": "day-cap", "state": "under"})
	over := e.budgetGauge("pistra_budget_buckets", map[string]string{"budget": "day-cap", "state": "over"})
	if under != 2 || over != 0 {
		t.Errorf("day-cap buckets: %v under, %v over; want 2 and 0", under, over)
	}
}

func checkSDKExhaustion(t *testing.T, e *env, c sdkBudgetCase, keyName, window string) {
	budget, key := window+"-cap", "sk-e2e-"+keyName
	spent := c.spend(t, e, key)
	row := e.settledRow(budget, keyName)
	if row.Spent != spent || row.Limit != 1000 {
		t.Fatalf("after one request the bucket is %+v, want spent %d (the usage the answer reported) of 1000", row, spent)
	}

	requests := map[string]string{"route": c.route, "code": "429"}
	refusals := map[string]string{"reason": "budget_exceeded"}
	requestsBefore, refusalsBefore := e.budgetCounter("pistra_requests_total", requests), e.budgetCounter("pistra_auth_failures_total", refusals)
	var log attemptLog
	err := c.refused(t, e, key, &log)
	if err == nil && window == "minute" {
		t.Skip("the minute rolled over between the spend and the refusal; its next bucket had room")
	}
	message := c.check(t, err)
	if !strings.Contains(message, `"`+budget+`"`) || !strings.Contains(message, "has no room left") {
		t.Errorf("refusal %q: want it to name %q and say it has no room left", message, budget)
	}

	want := 1 // x-should-retry: false
	if window == "minute" {
		want = 1 + sdkDefaultRetries
	}
	attempts := log.attempts()
	seen := e.budgetCounter("pistra_requests_total", requests) - requestsBefore
	counted := e.budgetCounter("pistra_auth_failures_total", refusals) - refusalsBefore
	if len(attempts) != want || seen != float64(want) || counted != float64(want) {
		t.Errorf("the SDK made %d attempts, pistrad answered %v with 429 and counted %v refusals: want %d of each",
			len(attempts), seen, counted, want)
	}

	row, ok := e.budgetRow(budget, keyName)
	if !ok {
		t.Fatalf("no bucket %s/%s after the refusal", budget, keyName)
	}
	if row.Spent != spent || row.Held != 0 {
		t.Errorf("a refusal changed the bucket: %+v, want spent %d, nothing held", row, spent)
	}
	length := time.Minute
	if window == "day" {
		length = 24 * time.Hour
	}
	if row.Reset.Sub(row.WindowStart) != length || !row.WindowStart.Equal(row.WindowStart.Truncate(length)) {
		t.Errorf("bucket window %v to %v: want one UTC %s", row.WindowStart, row.Reset, window)
	}
	for i, a := range attempts {
		checkRetryHeaders(t, i, a, row.Reset, window == "day")
	}
}

// checkRetryHeaders checks an attempt's retry-after is the seconds from
// when the gateway answered to reset, rounded up, and that x-should-retry
// is false exactly when that is more than a minute.
func checkRetryHeaders(t *testing.T, i int, a sdkAttempt, reset time.Time, noRetry bool) {
	t.Helper()
	if a.status != http.StatusTooManyRequests {
		t.Errorf("attempt %d: status %d", i, a.status)
		return
	}
	secs := func(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }
	got, err := strconv.ParseInt(a.retryAfter, 10, 64)
	// The gateway answered between sending and answering.
	if lo, hi := secs(reset.Sub(a.answered)), secs(reset.Sub(a.sent)); err != nil || got < lo || got > hi {
		t.Errorf("attempt %d: retry-after %q, want the %d..%d seconds to the window's reset at %v", i, a.retryAfter, lo, hi, reset)
	}
	if want := map[bool]string{true: "false"}[noRetry]; a.shouldRetry != want {
		t.Errorf("attempt %d: x-should-retry %q with retry-after %q, want %q", i, a.shouldRetry, a.retryAfter, want)
	}
}
