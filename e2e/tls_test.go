package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// tlsPolicy serves one OpenAI fake, with a timeout long enough for a stream
// held open across a certificate rotation.
func tlsPolicy(p policy) testkit.Policy {
	up := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
	up.Timeout = "30s"
	return testkit.Policy{
		Providers: map[string]testkit.Provider{"up-openai": up},
		Profiles:  map[string]testkit.Profile{"default": {}},
		Keys:      []testkit.Key{clientKey("default", "default", keyDefault)},
	}
}

// seen records, per response, the protocol and the serving certificate's
// serial number, as the SDK's transport saw them.
type seen struct {
	mu      sync.Mutex
	proto   []string
	serials []*big.Int
}

func (s *seen) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.proto = append(s.proto, resp.Proto)
		var serial *big.Int
		if resp.TLS != nil {
			serial = resp.TLS.PeerCertificates[0].SerialNumber
		}
		s.serials = append(s.serials, serial)
	}
	return resp, err
}

func (s *seen) last(t *testing.T) (string, *big.Int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.proto) == 0 {
		t.Fatal("no response was seen")
	}
	return s.proto[len(s.proto)-1], s.serials[len(s.serials)-1]
}

// httpsClient is the official SDK over HTTPS, trusting only pool, on a
// transport of its own (so its connections are its own).
func httpsClient(base string, pool *x509.CertPool, s *seen) openai.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	return sdkclient.OpenAI(base, keyDefault, option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMiddleware(s.middleware))
}

// handshake opens a new TLS connection offering h2 and returns what was
// negotiated and the serial number presented.
func handshake(t *testing.T, addr string, pool *x509.CertPool) (string, *big.Int) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st := conn.ConnectionState()
	return st.NegotiatedProtocol, st.PeerCertificates[0].SerialNumber
}

// waitLog waits until the daemon has logged line n times.
func waitLog(t *testing.T, d *daemon, line string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(d.logs.String(), line) < n {
		if time.Now().After(deadline) {
			t.Fatalf("pistrad did not log %s (%d times):\n%s", line, n, d.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLSListeners runs pistrad with -tls-cert/-tls-key: the SDK talks
// HTTP/2 to it, a stream's first event arrives while the upstream holds the
// rest, and certificates rotated on disk are served to new connections
// after SIGHUP while the open stream runs on to its end. A bad certificate
// is refused and the previous one keeps serving.
func TestTLSListeners(t *testing.T) {
	bin := buildPistrad(t)
	ca := testkit.NewCA(t)
	pool := ca.Pool()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(certPEM, keyPEM []byte) {
		writeFile(t, keyFile, keyPEM)
		writeFile(t, certFile, certPEM)
	}
	c1, k1, serial1 := ca.Issue(t, "pistrad first")
	install(c1, k1)

	pause := fakeprovider.NewPause()
	_, upstreamURL := budgetFake(t, fakeprovider.DialectOpenAI, secretOpenAI, pause.Wrap)
	e := &env{t: t, bundlePath: filepath.Join(t.TempDir(), "bundle.json")}
	e.writeBundle(policy{OpenAI: upstreamURL, Fixture: tlsPolicy})
	d := startDaemon(t, bin, daemonEnv(), "-bundle", e.bundlePath, "-tls-cert", certFile, "-tls-key", keyFile)
	t.Cleanup(pause.Release) // runs first: a held stream would hold up the stops
	base := "https://" + d.public + "/v1/"

	var first seen
	client := httpsClient(base, pool, &first)
	chat, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"))
	if err != nil || chat.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
		t.Fatalf("chat over TLS: %v", err)
	}
	if proto, serial := first.last(t); proto != "HTTP/2.0" || serial.Cmp(serial1) != 0 {
		t.Fatalf("chat went over %s with certificate %v, want HTTP/2.0 with %v", proto, serial, serial1)
	}
	adminClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", "https://"+d.admin+"/admin/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := adminClient.Do(req)
	if err != nil {
		t.Fatalf("the admin listener does not serve the same certificate: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("admin status over TLS answered %d (tls %v)", resp.StatusCode, resp.TLS != nil)
	}

	// A stream on the first certificate: its first event is relayed, over
	// h2, while the upstream holds everything after it.
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams("gpt-4o-mini"))
	if !stream.Next() {
		t.Fatalf("no first event: %v", stream.Err())
	}
	text := stream.Current().Choices[0].Delta.Content
	// The fake holds the stream at its second write; until it does, the
	// rest cannot have been sent, so the event came ahead of it.
	for deadline := time.Now().Add(5 * time.Second); pause.Held() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d upstream streams held, want 1", pause.Held())
		}
	}
	if proto, _ := first.last(t); proto != "HTTP/2.0" {
		t.Fatalf("the stream went over %s", proto)
	}

	c2, k2, serial2 := ca.Issue(t, "pistrad second")
	install(c2, k2)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, d, `"msg":"tls certificate reloaded"`, 1)
	if proto, serial := handshake(t, d.public, pool); proto != "h2" || serial.Cmp(serial2) != 0 {
		t.Fatalf("a new connection negotiated %q with certificate %v, want h2 with %v", proto, serial, serial2)
	}
	var second seen
	client2 := httpsClient(base, pool, &second)
	if _, err := client2.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini")); err != nil {
		t.Fatalf("chat on a new connection after rotation: %v", err)
	}
	if proto, serial := second.last(t); proto != "HTTP/2.0" || serial.Cmp(serial2) != 0 {
		t.Fatalf("after rotation a new client got %s with certificate %v, want HTTP/2.0 with %v", proto, serial, serial2)
	}

	// A certificate that does not match its key is refused; the second
	// serves on.
	c3, _, _ := ca.Issue(t, "pistrad mismatched")
	writeFile(t, certFile, c3)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, d, `"msg":"tls certificate reload refused; the old certificate keeps serving"`, 1)
	if _, serial := handshake(t, d.public, pool); serial.Cmp(serial2) != 0 {
		t.Fatalf("after a refused reload a new connection got certificate %v, want %v", serial, serial2)
	}

	// The stream opened before both reloads runs on to its end.
	pause.Release()
	for stream.Next() {
		if len(stream.Current().Choices) > 0 {
			text += stream.Current().Choices[0].Delta.Content
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("the stream opened before the rotation broke: %v", err)
	}
	if text != fakeprovider.ReplyText(prompt) {
		t.Fatalf("the stream carried %q, want %q", text, fakeprovider.ReplyText(prompt))
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, d.logs.String())
	}
	if logs := d.logs.String(); strings.Contains(logs, string(k1)) || strings.Contains(logs, string(k2)) {
		t.Error("a TLS private key appears in the logs")
	}
}
