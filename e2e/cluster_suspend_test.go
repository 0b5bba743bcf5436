package e2e

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/budget"
)

// adminSend sends method path with body to n's admin API and returns the
// status and the answer.
func (n *clusterNode) adminSend(method, path, body string) (int, string, error) {
	req, err := http.NewRequest(method, "http://"+n.adminAddr()+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// untilEveryNode sends key's request to every node at once, each in a
// tight loop, until want holds of its answer, and returns how long each
// took from start. It gives up on a node after d.
func (c *testCluster) untilEveryNode(t *testing.T, start time.Time, d time.Duration, key string, want func(answer) bool) map[string]time.Duration {
	t.Helper()
	var mu sync.Mutex
	took := map[string]time.Duration{}
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(func() {
			for deadline := start.Add(d); time.Now().Before(deadline); {
				if want(n.chat(key)) {
					mu.Lock()
					took[n.id] = time.Since(start)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	for _, n := range c.nodes {
		if _, ok := took[n.id]; !ok {
			t.Fatalf("%s: not within %s", n.id, d)
		}
	}
	return took
}

func suspended(a answer) bool {
	return a.err == nil && a.status == http.StatusForbidden && a.code == "key_suspended"
}
func answered(a answer) bool { return a.err == nil && a.status == http.StatusOK }

// TestClusterSuspensionReachesEveryNode suspends a key on one follower:
// every node refuses it within one flush interval of the answer, it is
// still refused after every node was killed and started again, and it
// is lifted everywhere from another node.
func TestClusterSuspensionReachesEveryNode(t *testing.T) {
	c := newTestCluster(t, 1000)
	leader := c.waitSettled(20 * time.Second)
	setter := c.followers(leader)[0]
	for _, n := range c.nodes {
		if a := n.chat(keyOpen); !answered(a) {
			t.Fatalf("%s before the suspension: %+v", n.id, a)
		}
	}

	code, body, err := setter.adminSend("POST", "/admin/v1/suspensions", `{"kind":"key","name":"open","reason":"leaked in a ticket"}`)
	if err != nil || code != http.StatusOK {
		t.Fatalf("suspend on %s: %d %s %v", setter.id, code, body, err)
	}
	// The answer comes once the leader has committed it; the other nodes
	// apply it when raft tells them it is committed, well within the
	// 500 ms a node may take to learn of another's spend.
	set := time.Now()
	took := c.untilEveryNode(t, set, 10*time.Second, keyOpen, suspended)
	t.Logf("set on %s (leader %s); refused after %v", setter.id, leader.id, took)
	for id, d := range took {
		if d > budget.FlushInterval {
			t.Errorf("%s refused the key %s after it was set, later than one flush interval", id, d)
		}
	}
	// The follower's own replica has the suspension by the time it answers.
	if !strings.Contains(body, "leaked in a ticket") {
		t.Errorf("POST /admin/v1/suspensions on follower %s answered %s, without the suspension it had just set", setter.id, strings.TrimSpace(body))
	}
	for _, n := range c.nodes {
		var list struct {
			Suspensions []struct{ Kind, Name, Reason, Node string }
		}
		if err := n.adminGet("/admin/v1/suspensions", &list); err != nil || len(list.Suspensions) != 1 ||
			list.Suspensions[0].Reason != "leaked in a ticket" || list.Suspensions[0].Node != setter.id {
			t.Errorf("%s lists %+v (%v)", n.id, list.Suspensions, err)
		}
	}

	// The whole cluster, killed and started again on its directories.
	for _, n := range c.nodes {
		c.kill(t, n)
	}
	c.start(t, c.nodes[0])
	// Alone it has no quorum, so its replica has not replayed its log.
	early := c.nodes[0].chat(keyOpen)
	readyCode, readyBody := c.nodes[0].readyz(t)
	for _, n := range c.nodes[1:] {
		c.start(t, n)
	}
	leader = c.waitSettled(20 * time.Second)
	for _, n := range c.nodes {
		if a := n.chat(keyOpen); !suspended(a) {
			t.Errorf("%s after a full restart: %+v, want 403 key_suspended", n.id, a)
		}
	}

	// Until its replica has replayed the log a node refuses every request
	// (503 not_ready): it cannot know the key is suspended.
	if !suspended(early) && early.status != http.StatusServiceUnavailable {
		t.Errorf("%s, started alone after a full restart and not ready (/readyz %d %q), answered the suspended key %d",
			c.nodes[0].id, readyCode, strings.TrimSpace(readyBody), early.status)
	}

	var other *clusterNode
	for _, n := range c.nodes {
		if n != setter {
			other = n
		}
	}
	if code, body, err := other.adminSend("DELETE", "/admin/v1/suspensions/key/open", ""); err != nil || code != http.StatusOK {
		t.Fatalf("lift on %s: %d %s %v", other.id, code, body, err)
	}
	lifted := time.Now()
	took = c.untilEveryNode(t, lifted, 10*time.Second, keyOpen, answered)
	t.Logf("lifted on %s (leader %s); served after %v", other.id, leader.id, took)
	for id, d := range took {
		if d > budget.FlushInterval {
			t.Errorf("%s served the key %s after it was lifted, later than one flush interval", id, d)
		}
	}
}
