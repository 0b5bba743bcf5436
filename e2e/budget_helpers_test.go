package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// What the budget tests share: reading GET /admin/v1/budgets, polling it,
// and serving a fake behind a wrapper at an address a policy can name.

// twoNativeProviders is one provider per dialect, each speaking only its
// own, for policies that add their own profiles, keys and budgets.
func twoNativeProviders(p policy) map[string]testkit.Provider {
	return map[string]testkit.Provider{
		"up-openai":    openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini"),
		"up-anthropic": anthropicProvider(p.Anthropic, 8192, "claude-haiku-4-5"),
	}
}

// pacedPolicy serves model from one OpenAI provider, paced-openai, at url
// (a fake behind a wrapper) within timeout, to keys of one profile that
// draws on budget alone.
func pacedPolicy(url, model, timeout, profile string, budget testkit.Budget, keys ...testkit.Key) testkit.Policy {
	up := openAIProvider(url, envOpenAI, model)
	up.Timeout = timeout
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"paced-openai": up},
		Profiles:  map[string]testkit.Profile{profile: {Budgets: []string{budget.Name}}},
		Keys:      keys,
		Budgets:   []testkit.Budget{budget},
	}
}

// caseKeys is a key of profile per name, named for it and presenting
// "sk-e2e-" and the name.
func caseKeys(profile string, names ...string) []testkit.Key {
	out := make([]testkit.Key, len(names))
	for i, n := range names {
		out[i] = clientKey(n, profile, "sk-e2e-"+n)
	}
	return out
}

// bucketRow is one bucket of GET /admin/v1/budgets, decoded by the
// documented field names rather than the server's own type, so a renamed
// field fails here.
type bucketRow struct {
	Budget      string    `json:"budget"`
	Bucket      string    `json:"bucket"`
	WindowStart time.Time `json:"window_start"`
	Reset       time.Time `json:"reset"`
	Limit       uint64    `json:"limit"`
	Spent       uint64    `json:"spent"`
	Held        uint64    `json:"held"`
}

type budgetsAnswer struct {
	AsOf    time.Time   `json:"as_of"`
	Buckets []bucketRow `json:"buckets"`
}

// budgetReport reads GET /admin/v1/budgets.
func (e *env) budgetReport() budgetsAnswer {
	e.t.Helper()
	r, err := fetchBudgets(e.srv.AdminAddr())
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// fetchBudgets reads GET /admin/v1/budgets from the admin listener at
// addr; it does not fail the test, so a sampling goroutine can call it.
func fetchBudgets(addr string) (budgetsAnswer, error) {
	var r budgetsAnswer
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/admin/v1/budgets", nil)
	if err != nil {
		return r, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, fmt.Errorf("GET /admin/v1/budgets: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("GET /admin/v1/budgets: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, fmt.Errorf("GET /admin/v1/budgets: %w", err)
	}
	return r, nil
}

// find is budget's bucket named name, if the report has it: the one of
// the latest window, should an earlier one still be draining.
func (r budgetsAnswer) find(budget, name string) (found bucketRow, ok bool) {
	for _, b := range r.Buckets {
		if b.Budget == budget && b.Bucket == name && (!ok || b.WindowStart.After(found.WindowStart)) {
			found, ok = b, true
		}
	}
	return found, ok
}

// budgetRow is budget's bucket named name, if the gateway has it open.
func (e *env) budgetRow(budget, name string) (bucketRow, bool) {
	e.t.Helper()
	return e.budgetReport().find(budget, name)
}

// settledRow waits until budget's bucket name holds nothing, every
// request on it settled, and returns it. The client has its answer a
// little before the gateway settles it, so this polls, within a deadline.
func (e *env) settledRow(budget, name string) bucketRow {
	e.t.Helper()
	var b bucketRow
	var ok bool
	budgetWait(e.t, "bucket "+budget+"/"+name+" to hold nothing", func() bool {
		b, ok = e.budgetRow(budget, name)
		return ok && b.Held == 0
	})
	return b
}

// budgetWait polls cond every few milliseconds until it holds, and fails
// the test when it still does not after ten seconds.
func budgetWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// budgetCounter reads a counter of the gateway's registry.
func (e *env) budgetCounter(name string, labels map[string]string) float64 {
	e.t.Helper()
	return testkit.Counter(e.t, e.srv.Metrics().Registry(), name, labels)
}

// budgetGauge reads a gauge of the gateway's registry.
func (e *env) budgetGauge(name string, labels map[string]string) float64 {
	e.t.Helper()
	return testkit.Gauge(e.t, e.srv.Metrics().Registry(), name, labels)
}

// budgetFake starts a fake of dialect d, with secret as its credential,
// behind wrap, on a loopback port; it returns the fake and the base URL a
// policy names.
func budgetFake(t *testing.T, d fakeprovider.Dialect, secret string, wrap func(http.Handler) http.Handler) (*fakeprovider.Server, string) {
	t.Helper()
	f, err := fakeprovider.New(fakeprovider.Options{Dialect: d, Key: secret})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(wrap(f))
	t.Cleanup(hs.Close)
	return f, hs.URL + "/v1"
}

// budgetPost posts body to the gateway's path with key, and returns the
// response for the caller to read and close.
func (e *env) budgetPost(client *http.Client, path, key string, body []byte, header ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+e.srv.PublicAddr()+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// budgetRefusal is the error object of an OpenAI-dialect refusal.
type budgetRefusal struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

// skipNearDayEnd skips a test whose requests must all fall in one UTC
// day when the day ends within margin: a bucket of the next day would
// start empty in the middle of the test.
func skipNearDayEnd(t *testing.T, margin time.Duration) {
	t.Helper()
	now := time.Now().UTC()
	end := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if end.Sub(now) < margin {
		t.Skipf("the UTC day ends in %v: a day's bucket would roll over mid-test", end.Sub(now))
	}
}
