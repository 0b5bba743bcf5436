package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/budget"
)

// clusterBody is what every request of the cluster tests sends: the same
// bytes, so every hold is the same, and a short answer.
var clusterBody = []byte(`{"model":"gpt-4o-mini","max_tokens":16,"messages":[{"role":"user","content":"Count this on every node"}]}`)

// clusterHold is what a node holds for clusterBody: the body's bytes over
// four, plus its max_tokens.
var clusterHold = uint64(len(clusterBody)/4 + 16)

// answer is what one request got.
type answer struct {
	status int
	code   string // the error's code, on a refusal
	tokens uint64 // usage.total_tokens, on a 200
	err    error  // no answer at all, or one that does not parse
}

// chat sends clusterBody to n with key.
func (n *clusterNode) chat(key string) answer {
	req, err := http.NewRequest(http.MethodPost, "http://"+n.publicAddr()+"/v1/chat/completions", bytes.NewReader(clusterBody))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := n.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, err: err}
	if err != nil {
		return a
	}
	var body struct {
		Usage struct {
			TotalTokens uint64 `json:"total_tokens"`
		} `json:"usage"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		a.err = fmt.Errorf("%s: %s", resp.Status, b)
		return a
	}
	a.tokens, a.code = body.Usage.TotalTokens, body.Error.Code
	if a.status == http.StatusOK && a.tokens == 0 {
		a.err = fmt.Errorf("a 200 without usage: %s", b)
	}
	return a
}

// served is one request answered 200: when the client had the answer,
// and what the provider said it cost.
type served struct {
	at     time.Time
	tokens uint64
}

// nodeLoad is what the clients of one node saw.
type nodeLoad struct {
	mu      sync.Mutex
	served  []served
	refused []time.Time // 429 budget_exceeded
	failed  []time.Time // anything else: no answer, or another status
	lastErr string
}

func (l *nodeLoad) record(a answer) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case a.err == nil && a.status == http.StatusOK:
		l.served = append(l.served, served{now, a.tokens})
	case a.err == nil && a.status == http.StatusTooManyRequests && a.code == "budget_exceeded":
		l.refused = append(l.refused, now)
	default:
		l.failed = append(l.failed, now)
		l.lastErr = fmt.Sprintf("status %d code %q err %v", a.status, a.code, a.err)
	}
}

// tokens is what was served in [from, to).
func (l *nodeLoad) tokens(from, to time.Time) (sum uint64, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.served {
		if !s.at.Before(from) && s.at.Before(to) {
			sum += s.tokens
			n++
		}
	}
	return sum, n
}

// rate is tokens per second served in [from, to).
func (l *nodeLoad) rate(from, to time.Time) float64 {
	sum, _ := l.tokens(from, to)
	return float64(sum) / to.Sub(from).Seconds()
}

// servedSince counts the requests served after t.
func (l *nodeLoad) servedSince(t time.Time) int {
	_, n := l.tokens(t, time.Now().Add(time.Hour))
	return n
}

// lastServed is when the last 200 arrived; zero if none did.
func (l *nodeLoad) lastServed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.served) == 0 {
		return time.Time{}
	}
	return l.served[len(l.served)-1].at
}

func (l *nodeLoad) counts() (served, refused, failed int, lastErr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.served), len(l.refused), len(l.failed), l.lastErr
}

// load is paced traffic on every node of a cluster.
type load struct {
	start  time.Time
	stop   chan struct{}
	wg     sync.WaitGroup
	byNode map[*clusterNode]*nodeLoad
}

// startLoad runs workers clients per node, each sending one request
// every period with key(node). Paced rather than flat out: the rate is
// then steady, so a figure measured over a window is the rate at its
// end too, and two shared cores keep room for raft's heartbeats and the
// flush ticks whose timing the tests' bounds are made of.
func (c *testCluster) startLoad(workers int, period time.Duration, key func(*clusterNode) string) *load {
	l := &load{start: time.Now(), stop: make(chan struct{}), byNode: map[*clusterNode]*nodeLoad{}}
	for _, n := range c.nodes {
		nl := &nodeLoad{}
		l.byNode[n] = nl
		k := key(n)
		for w := range workers {
			l.wg.Go(func() {
				// Spread the workers over the period rather than firing
				// them together.
				select {
				case <-time.After(period * time.Duration(w) / time.Duration(workers)):
				case <-l.stop:
					return
				}
				tick := time.NewTicker(period)
				defer tick.Stop()
				for {
					nl.record(n.chat(k))
					select {
					case <-l.stop:
						return
					case <-tick.C:
					}
				}
			})
		}
	}
	c.t.Cleanup(l.halt)
	return l
}

// halt stops the load and waits for the requests in flight.
func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// waitServing waits until each of nodes has served at least n requests
// after since.
func (c *testCluster) waitServing(l *load, nodes []*clusterNode, since time.Time, n int) {
	c.t.Helper()
	poll(c.t, 20*time.Second, fmt.Sprintf("%d requests served by each live node", n), func() (bool, string) {
		for _, node := range nodes {
			if got := l.byNode[node].servedSince(since); got < n {
				s, r, f, e := l.byNode[node].counts()
				return false, fmt.Sprintf("%s served %d (%d/%d/%d %s)", node.id, got, s, r, f, e)
			}
		}
		return true, ""
	})
}

// bucketRef names a bucket as one node reports it.
type bucketRef struct {
	n              *clusterNode
	budget, bucket string
}

// quiesce waits, once the load has stopped, until every bucket of refs
// holds nothing and every live node has flushed twice since: the first
// flush writes what was settled last, the second re-reads every total
// after all of them are in. It returns what each bucket then reports.
func (c *testCluster) quiesce(t *testing.T, refs ...bucketRef) map[bucketRef]uint64 {
	t.Helper()
	got := map[bucketRef]uint64{}
	poll(t, 15*time.Second, "every bucket to hold nothing", func() (bool, string) {
		for _, r := range refs {
			b, ok, err := r.n.bucket(r.budget, r.bucket)
			if err != nil || !ok || b.Held != 0 {
				return false, fmt.Sprintf("%s %s/%s: %+v %v %v", r.n.id, r.budget, r.bucket, b, ok, err)
			}
		}
		return true, ""
	})
	after := time.Now().Add(2*budget.FlushInterval + 100*time.Millisecond)
	poll(t, 15*time.Second, "two flushes on every node", func() (bool, string) {
		for _, n := range c.live() {
			st, err := n.status()
			if err != nil || st.LastFlush.Before(after) {
				return false, fmt.Sprintf("%s last flushed %s: %v", n.id, st.LastFlush, err)
			}
		}
		return true, ""
	})
	for _, r := range refs {
		b, ok, err := r.n.bucket(r.budget, r.bucket)
		if err != nil || !ok {
			t.Fatalf("%s %s/%s: %v %v", r.n.id, r.budget, r.bucket, ok, err)
		}
		got[r] = b.Spent
	}
	return got
}
