package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/ledger/cluster/clustertest"
)

// What the cluster tests share: three pistrad processes on loopback, each
// with its own ledger directory and cluster port, over mutual TLS with a
// CA made for the test, in front of one fake upstream in this process.

const clusterSecret = "e2e-cluster-secret"

// Client keys of clusterPolicy: capped draws on one small budget shared
// by the whole cluster; node-<id> on a large one, both per profile and
// per key, so each node's own spend has a bucket of its own; open on
// none. gated and held are each denied the model by an access rule: gated
// by a deployment-wide one the build folds into its profile's plans, held
// by its profile's own, which reads the key.
const (
	keyCapped = "sk-cluster-capped"
	keyOpen   = "sk-cluster-open"
	keyGated  = "sk-cluster-gated"
	keyHeld   = "sk-cluster-held"
)

func nodeKey(id string) string { return "sk-cluster-node-" + id }

// clusterKeyID is the id the policy gives the upstream's API key, which
// the usage ledger's rows carry.
const clusterKeyID = "key_e2e_cluster"

// clusterPolicy is one OpenAI fake and the budgets above; limit is
// cluster-cap's.
func clusterPolicy(limit uint64) fixture {
	return func(p policy) testkit.Policy {
		perProfile := func(name string, limit uint64) testkit.Budget {
			b := dayBudget(name, limit)
			b.Per = "profile"
			return b
		}
		tallyNode := dayBudget("tally-node", 1000000000000)
		tallyNode.Per = "key"
		up := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
		up.UsageAPI = &testkit.UsageAPI{KeyID: clusterKeyID}
		return testkit.Policy{
			Providers:   map[string]testkit.Provider{"up-openai": up},
			AccessRules: []testkit.Rule{{Name: "gated-mini", When: "profile == 'gated' && upstream_model == 'gpt-4o-mini'", Code: "mini_gated"}},
			Profiles: map[string]testkit.Profile{
				"capped": {Budgets: []string{"cluster-cap"}},
				"tally":  {Budgets: []string{"tally-shared", "tally-node"}},
				"open":   {},
				"gated":  {},
				"held":   {AccessRules: []testkit.Rule{{Name: "held-key", When: "key == 'held'", Code: "key_held"}}},
			},
			Keys: []testkit.Key{
				clientKey("capped", "capped", keyCapped),
				clientKey("open", "open", keyOpen),
				clientKey("gated", "gated", keyGated),
				clientKey("held", "held", keyHeld),
				clientKey("node-n1", "tally", nodeKey("n1")),
				clientKey("node-n2", "tally", nodeKey("n2")),
				clientKey("node-n3", "tally", nodeKey("n3")),
			},
			Budgets: []testkit.Budget{perProfile("cluster-cap", limit), perProfile("tally-shared", 1000000000000), tallyNode},
		}
	}
}

// testCluster is three pistrad processes sharing one raft ledger.
type testCluster struct {
	t      *testing.T
	bin    string
	ca     *clustertest.CA
	bundle string
	env    []string
	nodes  []*clusterNode
}

// clusterNode is one member: its name, cluster port and directories stay
// the same across restarts; the process, and so its public and admin
// ports, do not.
type clusterNode struct {
	id, raft      string                    // raft is the cluster port, host:port
	dir           string                    // ledger directory
	ca, cert, key string                    // PEM files
	d             *daemon                   // the process running now, or last
	runs          []*daemon                 // every process it ran as, for their logs
	addrs         atomic.Pointer[[2]string] // public, admin: the load reads them as the test restarts n
	client        *http.Client
	extra         []string // flags beyond the usual
	down          bool     // killed and not started again
	killedAt      time.Time
	kills         int
}

// newTestCluster builds pistrad, starts the fake and three nodes that
// bootstrap together, and waits until they have elected a leader and
// every one is ready.
func newTestCluster(t *testing.T, limit uint64) *testCluster {
	t.Helper()
	skipNearDayEnd(t, 3*time.Minute)
	c := &testCluster{t: t, bin: buildPistrad(t), ca: clustertest.NewCA(t, "e2e-cluster")}
	_, url := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI, RecordLimit: -1})
	c.bundle = filepath.Join(t.TempDir(), "bundle.json")
	b, err := json.Marshal(compilePolicy(t, policy{OpenAI: url, Fixture: clusterPolicy(limit)}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.bundle, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.env = []string{"E2E_OPENAI_KEY=" + secretOpenAI, "PISTRA_ADMIN_TOKEN=" + adminToken, "PISTRA_CLUSTER_SECRET=" + clusterSecret}
	ports := raftPorts(t, 3)
	var peers []string
	for i, addr := range ports {
		n := &clusterNode{id: fmt.Sprintf("n%d", i+1), raft: addr, dir: filepath.Join(t.TempDir(), "ledger"),
			client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
		n.ca, n.cert, n.key = c.ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
		c.nodes = append(c.nodes, n)
		peers = append(peers, n.id+"="+addr)
	}
	for _, n := range c.nodes {
		n.extra = []string{"-peers", strings.Join(peers, ",")}
		c.start(t, n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.checkLogs(t, n)
		}
	})
	c.waitSettled(20 * time.Second)
	return c
}

// raftPorts picks n free loopback ports below the kernel's ephemeral
// range (32768 and up on Linux), so that no outgoing connection of this
// busy test can take one while its node is down between a kill and a
// restart: a node must come back on the address raft knows it by.
func raftPorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for tries := 0; len(out) < n && tries < 200; tries++ {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		if !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	if len(out) < n {
		t.Fatalf("no %d free ports between 20000 and 32000", n)
	}
	return out
}

// flags are n's command line: the same on every start, as an operator's
// unit file would be (a directory with state ignores -peers).
func (c *testCluster) flags(n *clusterNode) []string {
	return append([]string{"-bundle", c.bundle, "-ledger-dir", n.dir, "-node-id", n.id, "-raft-listen", n.raft,
		"-cluster-ca", n.ca, "-cluster-cert", n.cert, "-cluster-key", n.key}, n.extra...)
}

// start runs n's process and reads its admin address from its
// "listening" line.
func (c *testCluster) start(t *testing.T, n *clusterNode) {
	t.Helper()
	n.d = startDaemon(t, c.bin, c.env, c.flags(n)...)
	n.runs = append(n.runs, n.d)
	n.addrs.Store(&[2]string{n.d.public, listeningField(t, n.d, "admin")})
	n.down = false
}

// kill ends n's process with SIGKILL and waits until it is gone.
func (c *testCluster) kill(t *testing.T, n *clusterNode) {
	t.Helper()
	if err := n.d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-n.d.exited
	n.killedAt, n.down = time.Now(), true
	n.kills++
	n.client.CloseIdleConnections()
	t.Logf("killed %s (-9) at %s", n.id, n.killedAt.Format("15:04:05.000"))
}

// checkLogs fails the test if a secret appears in a log of n's, and shows
// the logs when the test failed.
func (c *testCluster) checkLogs(t *testing.T, n *clusterNode) {
	for i, d := range n.runs {
		logs := d.logs.String()
		for _, s := range []string{clusterSecret, adminToken, secretOpenAI, keyCapped, keyOpen, keyGated, keyHeld, nodeKey(n.id)} {
			if strings.Contains(logs, s) {
				t.Errorf("%s logged a secret", n.id)
			}
		}
		if t.Failed() {
			t.Logf("%s, run %d: its log without the request lines (last 16 KiB):\n%s", n.id, i+1, tail(withoutRequests(logs), 16<<10))
		}
	}
}

// withoutRequests drops the per-request lines, which drown out what the
// ledger and raft said.
func withoutRequests(logs string) string {
	var b strings.Builder
	for line := range strings.Lines(logs) {
		if !strings.Contains(line, `"msg":"request"`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// listeningField reads key from d's "listening" log line.
func listeningField(t *testing.T, d *daemon, key string) string {
	t.Helper()
	for line := range strings.Lines(d.logs.String()) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "listening" {
			if v, ok := rec[key].(string); ok {
				return v
			}
		}
	}
	t.Fatalf("no %s in pistrad's listening line:\n%s", key, d.logs.String())
	return ""
}

// ledgerView is the "ledger" object of GET /admin/v1/status, decoded by
// its documented names.
type ledgerView struct {
	ID           string `json:"id"`
	State        string `json:"state"`
	Leader       string `json:"leader"`
	Ready        bool   `json:"ready"`
	AppliedIndex uint64 `json:"applied_index"`
	Servers      []struct {
		ID    string `json:"id"`
		Addr  string `json:"addr"`
		Voter bool   `json:"voter"`
	} `json:"servers"`
}

type statusView struct {
	LastFlush time.Time   `json:"last_flush"`
	Ledger    *ledgerView `json:"ledger"`
}

// adminGet decodes GET path of n's admin API into into; it does not fail
// the test, so that polls can call it while a node is down.
func (n *clusterNode) adminGet(path string, into any) error {
	req, err := http.NewRequest(http.MethodGet, "http://"+n.adminAddr()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return json.Unmarshal(b, into)
}

func (n *clusterNode) publicAddr() string { return n.addrs.Load()[0] }
func (n *clusterNode) adminAddr() string  { return n.addrs.Load()[1] }

func (n *clusterNode) status() (statusView, error) {
	var st statusView
	err := n.adminGet("/admin/v1/status", &st)
	if err == nil && st.Ledger == nil {
		err = fmt.Errorf("%s: status has no ledger", n.id)
	}
	return st, err
}

// bucket is n's bucket of budget named name, if open there.
func (n *clusterNode) bucket(budget, name string) (bucketRow, bool, error) {
	var r budgetsAnswer
	if err := n.adminGet("/admin/v1/budgets", &r); err != nil {
		return bucketRow{}, false, err
	}
	b, ok := r.find(budget, name)
	return b, ok, nil
}

// readyz is n's answer to GET /readyz.
func (n *clusterNode) readyz(t *testing.T) (int, string) {
	t.Helper()
	resp, err := n.client.Get("http://" + n.publicAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// live are the nodes whose process runs.
func (c *testCluster) live() []*clusterNode {
	var out []*clusterNode
	for _, n := range c.nodes {
		if !n.down {
			out = append(out, n)
		}
	}
	return out
}

// poll calls cond every 20 ms until it holds, failing the test after d
// with what and cond's last word. Every wait on the cluster is this: a
// bounded poll of what the nodes report, never a fixed sleep.
func poll(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s still waiting for %s: %s", d, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSettled waits until every live node is ready and names the same
// leader, a live node that says it leads, and returns that leader.
func (c *testCluster) waitSettled(d time.Duration) *clusterNode {
	c.t.Helper()
	var leader *clusterNode
	poll(c.t, d, "a leader every live node agrees on", func() (bool, string) {
		live := c.live()
		views := map[string]ledgerView{}
		for _, n := range live {
			st, err := n.status()
			if err != nil {
				return false, err.Error()
			}
			views[n.id] = *st.Ledger
		}
		id := views[live[0].id].Leader
		for _, n := range live {
			v := views[n.id]
			if !v.Ready || v.Leader == "" || v.Leader != id {
				return false, fmt.Sprintf("%+v", views)
			}
		}
		for _, n := range live {
			if n.id == id && views[id].State == "Leader" {
				leader = n
				return true, ""
			}
		}
		return false, fmt.Sprintf("leader %s is not live or does not lead: %+v", id, views)
	})
	return leader
}

// followers are the live nodes other than leader.
func (c *testCluster) followers(leader *clusterNode) []*clusterNode {
	var out []*clusterNode
	for _, n := range c.live() {
		if n != leader {
			out = append(out, n)
		}
	}
	return out
}
