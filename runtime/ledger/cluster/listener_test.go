package cluster_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/ledger/cluster"
	"github.com/pistra/pistra/runtime/ledger/cluster/clustertest"
)

// listen serves a cluster port on a free loopback port, advertised as
// localhost so that the advertised name and the bound IP differ.
func listen(t *testing.T, o cluster.Options) *cluster.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Advertise = fmt.Sprintf("localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	l, err := cluster.New(ln, o)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// serveHTTP answers every internal request on l with "ok".
func serveHTTP(t *testing.T, l *cluster.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l.HTTP())
	t.Cleanup(func() { srv.Close() })
}

func get(c *cluster.Listener, to *cluster.Listener) (string, error) {
	resp, err := c.Client().Get(c.URL(to.Advertise(), "/x"))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestRaftAndHTTPShareThePortOverMutualTLS(t *testing.T) {
	ca := clustertest.NewCA(t, "cluster")
	a := listen(t, cluster.Options{Credentials: ca.Credentials(t, "localhost")})
	b := listen(t, cluster.Options{Credentials: ca.Credentials(t, "localhost")})
	serveHTTP(t, a)

	if got := a.Raft().Addr().String(); got != a.Advertise() || !strings.HasPrefix(got, "localhost:") {
		t.Fatalf("raft address %q, want the advertised %q, not the bound IP", got, a.Advertise())
	}
	accepted := make(chan string, 1)
	go func() {
		c, err := a.Raft().Accept()
		if err != nil {
			accepted <- err.Error()
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		_, err = io.ReadFull(c, buf)
		accepted <- fmt.Sprint(string(buf), err)
	}()
	c, err := b.Raft().Dial(raft.ServerAddress(a.Advertise()), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	c.Write([]byte("ping"))
	if got := <-accepted; got != "ping<nil>" {
		t.Fatalf("raft side read %q", got)
	}
	if got, err := get(b, a); err != nil || got != "ok" {
		t.Fatalf("HTTP side: %q, %v", got, err)
	}
}

func TestForeignCAIsRefusedAndLogged(t *testing.T) {
	log, logger := clustertest.NewLog()
	ca := clustertest.NewCA(t, "cluster")
	a := listen(t, cluster.Options{Credentials: ca.Credentials(t, "localhost"), Logger: logger})
	serveHTTP(t, a)
	// The intruder trusts the cluster's CA, so what is refused can only be
	// its own certificate, issued by another CA.
	creds := clustertest.NewCA(t, "other").Credentials(t, "localhost")
	creds.CA = ca.Pool()
	intruder := listen(t, cluster.Options{Credentials: creds})

	if got, err := get(intruder, a); err == nil {
		t.Fatalf("HTTP from a foreign certificate answered %q", got)
	}
	log.WaitFor(t, 5*time.Second, "cluster connection refused", "certificate")
	c, err := intruder.Raft().Dial(raft.ServerAddress(a.Advertise()), 5*time.Second)
	if err == nil {
		// Under TLS 1.3 the client's handshake ends before the server has
		// judged its certificate; the refusal is the next read.
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err = c.Read(make([]byte, 1)); err == nil {
			t.Fatal("raft connection from a foreign certificate was kept open")
		}
	}
}

func TestPeerIsVerifiedByTheNameItIsDialledBy(t *testing.T) {
	ca := clustertest.NewCA(t, "cluster")
	// A certificate of the right CA, issued to another node's name.
	a := listen(t, cluster.Options{Credentials: ca.Credentials(t, "other.test")})
	b := listen(t, cluster.Options{Credentials: ca.Credentials(t, "localhost")})
	serveHTTP(t, a)
	_, err := b.Raft().Dial(raft.ServerAddress(a.Advertise()), 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "other.test") {
		t.Fatalf("dialling localhost reached a certificate for other.test: %v", err)
	}
	if _, err := get(b, a); err == nil {
		t.Fatal("HTTP to a certificate for another name succeeded")
	}
}

func TestPlaintextOnlyOnLoopbackAndOnlyWhenAsked(t *testing.T) {
	ca := clustertest.NewCA(t, "cluster")
	cases := []struct {
		name string
		bind string
		o    cluster.Options
		want string
	}{
		{"no credentials", "127.0.0.1:0", cluster.Options{}, "credentials are required"},
		{"both", "127.0.0.1:0", cluster.Options{Insecure: true, Credentials: ca.Credentials(t, "localhost")}, "exclusive"},
		{"not loopback", "0.0.0.0:0", cluster.Options{Insecure: true}, "loopback only"},
	}
	for _, c := range cases {
		c.o.Advertise = "localhost:7000"
		l, err := cluster.Listen(c.bind, c.o)
		if err == nil {
			l.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	a := listen(t, cluster.Options{Insecure: true})
	b := listen(t, cluster.Options{Insecure: true})
	serveHTTP(t, a)
	if got, err := get(b, a); err != nil || got != "ok" {
		t.Fatalf("plaintext HTTP on loopback: %q, %v", got, err)
	}
}

func TestLoadCredentials(t *testing.T) {
	ca := clustertest.NewCA(t, "cluster")
	caFile, certFile, keyFile := ca.WriteFiles(t, t.TempDir(), "localhost")
	creds, err := cluster.LoadCredentials(caFile, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	a := listen(t, cluster.Options{Credentials: creds})
	b := listen(t, cluster.Options{Credentials: ca.Credentials(t, "localhost")})
	serveHTTP(t, a)
	if got, err := get(b, a); err != nil || got != "ok" {
		t.Fatalf("HTTP to credentials loaded from files: %q, %v", got, err)
	}
	if _, err := cluster.LoadCredentials(certFile+".missing", certFile, keyFile); err == nil {
		t.Fatal("a missing CA file loaded")
	}
	if _, err := cluster.LoadCredentials(keyFile, certFile, keyFile); err == nil {
		t.Fatal("a CA file without a certificate loaded")
	}
}
