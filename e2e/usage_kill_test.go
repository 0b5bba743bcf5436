package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestUsageAndBucketsSurviveKillOnOneNode: a single pistrad on its own
// ledger directory, killed with -9 once its settles were flushed (one
// flush interval), lists after the restart, before any request, the usage
// rows and the budget bucket the ledger holds, with all of it.
func TestUsageAndBucketsSurviveKillOnOneNode(t *testing.T) {
	skipNearDayEnd(t, 3*time.Minute)
	r := newReconcileRig(t, "-ledger-dir", t.TempDir())
	var tokens uint64
	for range 3 {
		var a struct {
			Usage struct {
				TotalTokens uint64 `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(r.openAI("chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"kept on disk"}]}`), &a); err != nil || a.Usage.TotalTokens == 0 {
			t.Fatalf("usage %+v: %v", a, err)
		}
		tokens += a.Usage.TotalTokens
	}
	day := time.Now().UTC().Format(time.DateOnly)
	requests := func() (uint64, uint64, error) {
		rows, err := r.usage(day)
		var n, tok uint64
		for _, row := range rows {
			n, tok = n+row.Requests, tok+row.InputTokens+row.OutputTokens
		}
		return n, tok, err
	}
	// /admin/v1/usage reads the ledger alone: 3 there is 3 flushed.
	poll(t, 10*time.Second, "the 3 requests to reach the ledger", func() (bool, string) {
		n, _, err := requests()
		return err == nil && n == 3, fmt.Sprintf("%d %v", n, err)
	})

	r.killAndRestart()
	poll(t, 15*time.Second, "the restarted pistrad to be ready", func() (bool, string) {
		resp, err := http.Get("http://" + r.d.public + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	n, tok, err := requests()
	if err != nil || n != 3 || tok != tokens {
		t.Errorf("after kill -9: %d requests, %d tokens (%v), want 3 and %d", n, tok, err, tokens)
	}
	b, err := fetchBudgets(r.d.admin)
	if err != nil {
		t.Fatal(err)
	}
	bucket, ok := b.find("reconcile-day", "default")
	if !ok || bucket.Spent != tokens {
		t.Errorf("after kill -9, before any request: bucket %+v (%v) in %+v, want spent %d", bucket, ok, b.Buckets, tokens)
	}
}
