package ledger

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/ledger/cluster"
	"github.com/pistra/pistra/runtime/ledger/cluster/clustertest"
	"github.com/pistra/pistra/runtime/suspend"
)

// TestAForeignCertificateCannotJoinNorFlush starts an intruder that has
// everything but a certificate from the cluster's CA: it trusts that CA
// and knows the cluster secret. Its join and its flush are refused at the
// handshake, and the cluster logs the refusal.
func TestAForeignCertificateCannotJoinNorFlush(t *testing.T) {
	c := newCluster(t, 3)
	leader := c.leader()
	mustAdd(t, leader, budget.Delta{Key: key("a"), Spent: 5})

	creds := clustertest.NewCA(t, "other").Credentials(t, "localhost")
	creds.CA = c.ca.Pool()
	ln := listenLoopback(t, "127.0.0.1:0")
	intruder := &testNode{id: "intruder", addr: "localhost:" + portOf(ln), dir: t.TempDir()}
	c.openAs(intruder, ln, creds, Config{Join: []string{leader.addr}})
	defer intruder.Shutdown()

	c.log.WaitFor(t, waitFor, "node=intruder", "ledger: join")
	c.log.WaitFor(t, waitFor, "node="+leader.id, "cluster connection refused", "certificate")
	data, err := encode(command{Batch: &batch{Session: "intruder/1", Seq: 1, Deltas: wireDeltas([]budget.Delta{{Key: key("a"), Spent: 1000}})}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := intruder.post(ctx, leader.addr, pathApply, data, true); err == nil {
		t.Fatal("a flush from a foreign certificate was taken")
	}

	st := leader.Status(ctx)
	for _, s := range st.Servers {
		if s.ID == intruder.id {
			t.Fatalf("the intruder is in the configuration: %+v", st.Servers)
		}
	}
	c.wantEverywhere([]budget.Key{key("a")}, []uint64{5})
}

// TestTheClusterSecretIsRequired: a caller with a good certificate but
// not the secret is refused, and logged.
func TestTheClusterSecretIsRequired(t *testing.T) {
	c := newCluster(t, 3)
	leader := c.leader()
	caller, err := cluster.Listen("127.0.0.1:0", cluster.Options{Advertise: "localhost:1", Credentials: c.ca.Credentials(t, "localhost")})
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	data, _ := encode(command{Suspend: &wireSuspension{Kind: suspend.KindKey, Name: "everyone"}})
	for _, secret := range []string{"", "guess", testSecret + "x"} {
		req, _ := http.NewRequest(http.MethodPost, caller.URL(leader.addr, pathApply), strings.NewReader(string(data)))
		if secret != "" {
			req.Header.Set(secretHeader, secret)
		}
		resp, err := caller.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("secret %q: %s, want 401", secret, resp.Status)
		}
	}
	c.log.WaitFor(t, waitFor, "node="+leader.id, "wrong cluster secret")
	if _, ok := leader.Suspended(suspend.KindKey, "everyone"); ok {
		t.Fatal("a request without the secret was applied")
	}
}
