package e2e

import (
	"fmt"
	"testing"
	"time"
)

// usageAnswer is GET /admin/v1/usage, decoded by its documented field
// names (docs/usage.md) rather than the server's own type.
type usageAnswer struct {
	Day           string     `json:"day"`
	RetentionDays int        `json:"retention_days"`
	Rows          []usageRow `json:"rows"`
}

type usageRow struct {
	Provider                 string `json:"provider"`
	Model                    string `json:"model"`
	KeyID                    string `json:"key_id"`
	WorkspaceID              string `json:"workspace_id"`
	Requests                 uint64 `json:"requests"`
	EstimatedRequests        uint64 `json:"estimated_requests"`
	InputTokens              uint64 `json:"input_tokens"`
	CachedInputTokens        uint64 `json:"cached_input_tokens"`
	CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
	OutputTokens             uint64 `json:"output_tokens"`
	ReasoningTokens          uint64 `json:"reasoning_tokens"`
}

// usage is n's only usage row of today: the cluster tests' traffic has
// one provider, one model and one key id.
func (n *clusterNode) usage() (usageRow, error) {
	day := time.Now().UTC().Format(time.DateOnly)
	var r usageAnswer
	if err := n.adminGet("/admin/v1/usage?day="+day, &r); err != nil {
		return usageRow{}, err
	}
	if r.Day != day || r.RetentionDays != 62 || len(r.Rows) != 1 {
		return usageRow{}, fmt.Errorf("%s: usage %+v, want one row of %s kept 62 days", n.id, r, day)
	}
	return r.Rows[0], nil
}

// tally is what the clients were answered.
type tally struct{ requests, tokens uint64 }

func (c *testCluster) send(t *testing.T, n *clusterNode, key string, times int, into ...*tally) {
	t.Helper()
	for range times {
		a := n.chat(key)
		if a.err != nil || a.status != 200 {
			t.Fatalf("%s: %d %s %v", n.id, a.status, a.code, a.err)
		}
		for _, s := range into {
			s.requests++
			s.tokens += a.tokens
		}
	}
}

// waitUsage waits until every node in nodes reports the same usage row,
// with want's requests, and returns it.
func waitUsage(t *testing.T, nodes []*clusterNode, want tally) usageRow {
	t.Helper()
	var row usageRow
	poll(t, 15*time.Second, fmt.Sprintf("every node to report %d requests", want.requests), func() (bool, string) {
		for i, n := range nodes {
			r, err := n.usage()
			if err != nil {
				return false, err.Error()
			}
			if r.Requests != want.requests || (i > 0 && r != row) {
				return false, fmt.Sprintf("%s: %+v, %s: %+v", nodes[0].id, row, n.id, r)
			}
			row = r
		}
		return true, ""
	})
	return row
}

// TestClusterUsageAndBucketsOnEveryNode: the usage ledger's rows agree on
// every node of the cluster, whichever served the traffic; a node that
// served none of a bucket's traffic lists the bucket with the spend the
// ledger holds; a node killed with -9 and restarted reports, before any
// request reaches it, the rows and the buckets the ledger has, which
// keep all it settled up to its last flush.
func TestClusterUsageAndBucketsOnEveryNode(t *testing.T) {
	c := newTestCluster(t, 1000000)
	leader := c.waitSettled(20 * time.Second)
	fs := c.followers(leader)
	busy, quiet := fs[0], fs[1]
	var all, busyKey, shared tally
	c.send(t, busy, nodeKey(busy.id), 5, &all, &busyKey, &shared)
	c.send(t, busy, keyOpen, 3, &all) // a profile without budgets is metered all the same
	c.send(t, leader, nodeKey(leader.id), 2, &all, &shared)
	row := waitUsage(t, c.nodes, all)
	want := usageRow{Provider: "up-openai", Model: "gpt-4o-mini", KeyID: clusterKeyID, Requests: all.requests,
		InputTokens: row.InputTokens, OutputTokens: row.OutputTokens}
	if row != want || row.InputTokens+row.OutputTokens != all.tokens {
		t.Fatalf("usage row %+v, want %+v with %d tokens in all", row, want, all.tokens)
	}

	// quiet served none of it: it lists the buckets with the ledger's spend.
	checkBucket := func(n *clusterNode, budget, name string, spent uint64) {
		t.Helper()
		poll(t, 5*time.Second, fmt.Sprintf("%s to list %s/%s at %d", n.id, budget, name, spent), func() (bool, string) {
			b, ok, err := n.bucket(budget, name)
			return err == nil && ok && b.Spent == spent && b.Limit == 1000000000000, fmt.Sprintf("%+v %v %v", b, ok, err)
		})
	}
	checkBucket(quiet, "tally-node", "node-"+busy.id, busyKey.tokens)
	checkBucket(quiet, "tally-shared", "tally", shared.tokens)

	// More on busy, flushed (quiet sees it), then a last burst and -9 at
	// once: what was flushed survives; the burst may or may not have.
	c.send(t, busy, nodeKey(busy.id), 4, &all, &busyKey, &shared)
	flushed := all
	waitUsage(t, []*clusterNode{quiet}, flushed)
	burst := tally{}
	c.send(t, busy, keyOpen, 3, &burst)
	c.kill(t, busy)
	c.start(t, busy)
	c.waitSettled(20 * time.Second)
	var after usageRow
	poll(t, 15*time.Second, "the restarted node to report what the others do", func() (bool, string) {
		a, errA := busy.usage()
		b, errB := quiet.usage()
		after = a
		return errA == nil && errB == nil && a == b, fmt.Sprintf("%s %+v %v; %s %+v %v", busy.id, a, errA, quiet.id, b, errB)
	})
	if after.Requests < flushed.requests || after.Requests > flushed.requests+burst.requests {
		t.Fatalf("after kill -9: %d requests, want the %d flushed before it and at most the %d of the last burst", after.Requests, flushed.requests, burst.requests)
	}
	checkBucket(busy, "tally-node", "node-"+busy.id, busyKey.tokens)
	checkBucket(busy, "tally-shared", "tally", shared.tokens)
}
