package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/dnstest"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
	"github.com/pistra/pistra/runtime/plan"
)

// The pool tests' names: the pool's DNS name and its subset's, poolReply by
// the test's own DNS server, and the key of a profile bound to the subset.
const (
	poolName   = "gpus.pool.test"
	subsetName = "gpus-a.pool.test"
	keyBatch   = "sk-e2e-pool-batch"
)

// members are fake OpenAI providers on 127.0.0.2, .3, ... all on one
// port, as the pods behind a headless Service listen on one port.
type members struct {
	port    string
	servers []*fakeprovider.Server
}

// startMembers binds n fakes on 127.0.0.2 onwards, trying a few ports
// should one be taken on some address.
func startMembers(t *testing.T, n int) *members {
	t.Helper()
	var last error
	for range 10 {
		m, err := bindMembers(t, n)
		if err == nil {
			return m
		}
		last = err
	}
	t.Fatalf("no port free on 127.0.0.2-%d: %v", n+1, last)
	return nil
}

func bindMembers(t *testing.T, n int) (*members, error) {
	m := &members{}
	var bound []*fakeprovider.Listener
	cleanup := func() {
		for _, l := range bound {
			_ = l.Shutdown(context.Background())
		}
	}
	for i := range n {
		s, err := fakeprovider.New(fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
		if err != nil {
			t.Fatal(err)
		}
		port := m.port
		if port == "" {
			port = "0"
		}
		l, err := s.Listen(net.JoinHostPort(memberIP(i), port))
		if err != nil {
			cleanup()
			return nil, err
		}
		bound = append(bound, l)
		_, m.port, _ = net.SplitHostPort(l.Addr)
		m.servers = append(m.servers, s)
	}
	t.Cleanup(cleanup)
	return m, nil
}

// memberIP is the address of member i: 127.0.0.2 onwards.
func memberIP(i int) string { return fmt.Sprintf("127.0.0.%d", i+2) }

// addr is member i's host:port (member i need not listen: an address on
// the members' port with nothing behind it is a member that is down).
func (m *members) addr(i int) string { return net.JoinHostPort(memberIP(i), m.port) }

// ips are the addresses of the members listed, for a DNS answer.
func ips(list ...int) []string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = memberIP(n)
	}
	return out
}

// poolPolicy serves "llama" from provider gpus, the pool pl, and
// "llama-open" from gpus-open, the same pool with picker_failure "open"
// when pl has a picker. Profile batch is bound to subset "a".
func poolPolicy(pl testkit.Pool) testkit.Policy {
	provider := func(pool, model string) testkit.Provider {
		return testkit.Provider{Pool: pool, CredentialEnv: envOpenAI, Models: modelsOf(0, model, "llama-70b"),
			Channels: nativeChannel("openai", "chat_completions"), Timeout: "5s", Retries: retries(1, "connect")}
	}
	pl.Subsets = map[string]testkit.Subset{"a": {DNS: net.JoinHostPort(subsetName, portOf(pl.DNS))}}
	p := testkit.Policy{
		Providers: map[string]testkit.Provider{"gpus": provider("gpus", "llama")},
		Pools:     map[string]testkit.Pool{"gpus": pl},
		Profiles:  map[string]testkit.Profile{"default": {}, "batch": {PoolSubset: "a"}},
		Keys:      []testkit.Key{clientKey("default", "default", keyDefault), clientKey("batch", "batch", keyBatch)},
		Primary:   map[string]string{"llama-70b": "gpus"},
	}
	if pl.Picker != "" {
		open := pl
		open.PickerFailure = "open"
		p.Pools["gpus-open"] = open
		p.Providers["gpus-open"] = provider("gpus-open", "llama-open")
	}
	return p
}

func portOf(hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	return port
}

// poolPlan compiles p.
func poolPlan(t *testing.T, p testkit.Policy) *plan.Graph {
	t.Helper()
	return compilePolicy(t, policy{Fixture: func(policy) testkit.Policy { return p }})
}

// poolDaemon runs pistrad on g, with env, resolving pool names at dns and
// re-resolving at least every maxTTL.
func poolDaemon(t *testing.T, bin string, g *plan.Graph, dns *dnstest.Server, maxTTL time.Duration, env ...string) *daemon {
	t.Helper()
	bundlePath := filepath.Join(t.TempDir(), "bundle.json")
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundlePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PISTRA_ADMIN_TOKEN="+adminToken, envOpenAI+"="+secretOpenAI)
	d := startDaemon(t, bin, env, "-bundle", bundlePath,
		"-pool-dns-server", dns.Addr(), "-pool-min-ttl", "50ms", "-pool-max-ttl", maxTTL.String())
	t.Cleanup(func() {
		logs := d.logs.String()
		if strings.Contains(logs, secretOpenAI) || strings.Contains(logs, secretBackup) || strings.Contains(logs, keyDefault) || strings.Contains(logs, keyBatch) {
			t.Errorf("a secret appears in the daemon's logs")
		}
		if t.Failed() {
			t.Logf("pistrad logs:\n%s", logs)
		}
		_ = d.cmd.Process.Kill()
	})
	return d
}

// poolReply is what one chat completion through the daemon came back with.
type poolReply struct {
	err      error
	endpoint string
	model    string
	header   http.Header
}

// chat sends one chat completion for model with key through d.
func (d *daemon) chat(t *testing.T, key, model string) poolReply {
	t.Helper()
	client := sdkclient.OpenAI("http://"+d.public+"/v1/", key)
	var resp *http.Response
	_, err := client.Chat.Completions.New(context.Background(), chatParams(model), option.WithResponseInto(&resp))
	out := poolReply{err: err}
	if resp != nil {
		out.header = resp.Header
		out.endpoint, out.model = resp.Header.Get("Pistra-Endpoint"), resp.Header.Get("Pistra-Model")
	}
	return out
}

// mustServe is chat, failing the test unless a member answered.
func (d *daemon) mustServe(t *testing.T, key, model string) poolReply {
	t.Helper()
	s := d.chat(t, key, model)
	if s.err != nil || s.endpoint == "" {
		t.Fatalf("chat %s: %v (Pistra-Endpoint %q)", model, s.err, s.endpoint)
	}
	return s
}

// scrape reads the daemon's public /metrics.
func (d *daemon) scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + d.public + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// picks is pistra_pool_picks_total for provider and outcome, as scraped.
func (d *daemon) picks(t *testing.T, provider, outcome string) string {
	t.Helper()
	return d.sample(t, fmt.Sprintf(`pistra_pool_picks_total{outcome=%q,provider=%q}`, outcome, provider))
}

// sample is the value of one series (name{labels} as Prometheus writes
// it) in the daemon's /metrics, "0" when absent.
func (d *daemon) sample(t *testing.T, series string) string {
	t.Helper()
	for _, l := range strings.Split(d.scrape(t), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return "0"
}

// waitFor polls cond (every 20 ms, at most 5 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
