package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/ledger/cluster/clustertest"
)

const (
	refusedLine = `"msg":"cluster connection refused"`
	applyPath   = "/internal/v1/ledger/apply"
	removePath  = "/internal/v1/ledger/remove"
)

// What a cluster port logs as the reason it refused a connection: a
// client with no certificate (Go's TLS client sends none when it holds
// only one of a CA the server does not name), one of another CA, and no
// TLS at all.
const (
	noCertificate = "didn't provide a certificate"
	unknownCA     = "certificate signed by unknown authority"
	noTLS         = "does not look like a TLS handshake"
)

// refusals counts the connections n's cluster port refused for why.
func (n *clusterNode) refusals(why string) int {
	count := 0
	for line := range strings.Lines(n.d.logs.String()) {
		if strings.Contains(line, refusedLine) && strings.Contains(line, why) {
			count++
		}
	}
	return count
}

// rogue is a node whose certificate another CA issued, for the name the
// cluster's nodes use, and which trusts the cluster's CA: it has all a
// node needs (the CA's certificate is no secret, and it is given the
// cluster secret too) but a certificate from the cluster CA. extra are
// its flags beyond the usual, given its cluster port.
func (c *testCluster) rogue(t *testing.T, id string, extra func(raft string) []string) *clusterNode {
	t.Helper()
	n := &clusterNode{id: id, raft: raftPorts(t, 1)[0], dir: t.TempDir(), client: &http.Client{Timeout: 10 * time.Second}}
	n.extra = extra(n.raft)
	n.ca, n.cert, n.key = clustertest.NewCA(t, "not-the-cluster").WriteFiles(t, t.TempDir(), "127.0.0.1")
	pem, err := os.ReadFile(c.nodes[0].ca)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.ca, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	c.start(t, n)
	t.Cleanup(func() {
		if !n.down {
			c.kill(t, n)
		}
		c.checkLogs(t, n)
	})
	return n
}

// flushBatch is one flush of 1000 tokens to tally-node's bucket of key
// node-n1 in the window starting at window, in the ledger's wire format
// (runtime/ledger/command.go: a format byte, then the command as JSON),
// as a node posts it to the leader's internal endpoint.
func flushBatch(session string, window int64) []byte {
	cmd := map[string]any{"batch": map[string]any{"session": session, "seq": 1, "base": 0, "at": time.Now().Unix(),
		"deltas": []map[string]any{{"b": "tally-node", "k": "node-n1", "p": "day", "w": window, "n": 1000}}}}
	b, _ := json.Marshal(cmd)
	return append([]byte{1}, b...)
}

// postInternal posts body to path of the internal endpoint on the
// cluster port addr with the cluster secret, over TLS with cert (trusting
// the cluster CA), or in plaintext when cert is nil.
func (c *testCluster) postInternal(addr, path string, cert *tls.Certificate, body []byte) (int, error) {
	url := "https://" + addr + path
	tr := &http.Transport{}
	if cert == nil {
		url = "http://" + addr + path
	} else {
		// Presented whatever the server says it accepts: Go's client
		// would otherwise send no certificate rather than one of another CA.
		tr.TLSClientConfig = &tls.Config{RootCAs: c.ca.Pool(), ServerName: "127.0.0.1",
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Pistra-Cluster-Secret", clusterSecret)
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestClusterRefusesNodesWithoutItsCertificate: a node whose certificate
// the cluster CA did not issue, holding the CA's certificate and the
// cluster secret, can neither join (asking a member over the internal
// endpoint) nor take part in raft (bootstrapping with the members as its
// peers, so that it asks them for votes): pistrad presents no
// certificate the members name, and they refuse it at the handshake. A
// flush batch posted by a client that presents the foreign certificate
// anyway is refused by verification, and one in plaintext as not TLS.
// Each refusal is logged by the member it reached, and the cluster's
// membership and leader are as they were. The same batch with a cluster
// certificate is counted, so it is the certificate that was refused.
func TestClusterRefusesNodesWithoutItsCertificate(t *testing.T) {
	c := newTestCluster(t, 1000)
	leader := c.waitSettled(20 * time.Second)
	n1 := c.nodes[0]
	if a := n1.chat(nodeKey("n1")); !answered(a) {
		t.Fatalf("n1: %+v", a)
	}
	b, _, err := n1.bucket("tally-node", "node-n1")
	if err != nil {
		t.Fatal(err)
	}
	before := b.Spent

	t.Run("join", func(t *testing.T) {
		refused := n1.refusals(noCertificate)
		r := c.rogue(t, "rogue-join", func(string) []string { return []string{"-join", n1.raft} })
		poll(t, 15*time.Second, "n1 to refuse the rogue's join and the rogue to say why", func() (bool, string) {
			return n1.refusals(noCertificate) > refused && strings.Contains(r.d.logs.String(), "certificate required"), "no refusal yet"
		})
		st, err := r.status()
		if err != nil || st.Ledger.Leader != "" || len(st.Ledger.Servers) != 0 {
			t.Errorf("the rogue's view: %+v %v", st.Ledger, err)
		}
		code, body := r.readyz(t)
		c.kill(t, r)
		// A replacement that was never admitted holds none of the ledger.
		if code == http.StatusOK {
			t.Errorf("a node started with -join and an empty -ledger-dir, never admitted, answers /readyz %d %q",
				code, strings.TrimSpace(body))
		}
	})
	t.Run("raft", func(t *testing.T) {
		var peers []string
		refused := map[*clusterNode]int{}
		for _, n := range c.nodes {
			peers = append(peers, n.id+"="+n.raft)
			refused[n] = n.refusals(noCertificate)
		}
		r := c.rogue(t, "rogue-raft", func(raft string) []string {
			return []string{"-peers", strings.Join(append(peers, "rogue-raft="+raft), ",")}
		})
		poll(t, 20*time.Second, "every member to refuse the rogue's raft connections", func() (bool, string) {
			for _, n := range c.nodes {
				if n.refusals(noCertificate) == refused[n] {
					return false, n.id + " refused nothing yet"
				}
			}
			return true, ""
		})
		c.kill(t, r)
	})
	t.Run("flush", func(t *testing.T) {
		window := b.WindowStart.Unix()
		foreign := clustertest.NewCA(t, "not-the-cluster").Credentials(t, "127.0.0.1").Cert
		foreignBefore, plainBefore := leader.refusals(unknownCA), leader.refusals(noTLS)
		if code, err := c.postInternal(leader.raft, applyPath, &foreign, flushBatch("rogue/1", window)); err == nil {
			t.Errorf("a flush with a foreign certificate was answered %d", code)
		}
		if code, err := c.postInternal(leader.raft, applyPath, nil, flushBatch("rogue/2", window)); err == nil {
			t.Errorf("a flush in plaintext was answered %d", code)
		}
		poll(t, 10*time.Second, "the leader to log both refusals", func() (bool, string) {
			f, p := leader.refusals(unknownCA)-foreignBefore, leader.refusals(noTLS)-plainBefore
			return f > 0 && p > 0, fmt.Sprintf("%d refusals of the foreign certificate logged, %d of plaintext", f, p)
		})
		// A cluster certificate and the same batch but for its session:
		// counted, once.
		member := c.ca.Credentials(t, "127.0.0.1").Cert
		if code, err := c.postInternal(leader.raft, applyPath, &member, flushBatch("control/1", window)); err != nil || code != http.StatusNoContent {
			t.Fatalf("the same flush with a cluster certificate: %d %v", code, err)
		}
		poll(t, 10*time.Second, "n1 to read the control flush", func() (bool, string) {
			b, _, err := n1.bucket("tally-node", "node-n1")
			return err == nil && b.Spent == before+1000, fmt.Sprintf("spent %d, want %d (%v)", b.Spent, before+1000, err)
		})
	})

	// Nothing changed in the cluster: the same members, the same leader.
	if got := c.waitSettled(20 * time.Second); got != leader {
		t.Errorf("the leader moved from %s to %s", leader.id, got.id)
	}
	st, err := leader.status()
	if err != nil || len(st.Ledger.Servers) != 3 {
		t.Fatalf("members after the attempts: %+v %v", st.Ledger, err)
	}
	for _, s := range st.Ledger.Servers {
		if !strings.HasPrefix(s.ID, "n") {
			t.Errorf("%s is a member", s.ID)
		}
	}
}
