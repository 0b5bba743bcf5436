package e2e

import (
	"context"
	"crypto/x509"
	"math/big"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/server"
)

// isolationPolicy puts every pair of tiers behind one failover each:
// oa (OpenAI, native) fails over to backup (native), to an's
// OpenAI-compatible channel, or to mtls (a client-certificate upstream with
// no header credential); an (Anthropic, native plus OpenAI-compatible)
// fails over to oa, natively for OpenAI clients and translated for
// Anthropic ones. Each provider and channel has static headers of its own
// so a leak names its source.
func isolationPolicy(mtlsURL string, pki *testkit.PKI) fixture {
	return func(p policy) testkit.Policy {
		oa := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
		oa.Headers = map[string]string{"OpenAI-Organization": "org-oa", "X-Static-Oa": "oa"}
		oa.Aliases = map[string]string{"native-native": "gpt-4o-mini", "native-compat": "gpt-4o-mini", "native-mtls": "gpt-4o-mini",
			"native-translated": "gpt-4o-mini", "compat-native": "gpt-4o-mini"}
		oa.Failover = failover([]string{"backup", "an", "mtls"}, "5xx")

		backup := openAIProvider(p.Backup, envBackup, "backup-mini")
		backup.Headers = map[string]string{"X-Static-Backup": "backup"}
		backup.Aliases = map[string]string{"native-native": "backup-mini"}

		an := anthropicProvider(p.Anthropic, 1024, "claude-haiku-4-5")
		an.Headers = map[string]string{"anthropic-version": "2023-06-01", "anthropic-beta": "beta-an", "X-Static-An": "an"}
		an.Aliases = map[string]string{"native-compat": "claude-haiku-4-5", "native-translated": "claude-haiku-4-5", "compat-native": "claude-haiku-4-5"}
		an.Channels["compat"] = testkit.Channel{Dialect: "openai", Tier: "provider_compat", Routes: []string{"chat_completions"},
			Headers: map[string]string{"X-Static-An-Compat": "compat"}, Preserves: testkit.Keeps(),
			VerifiedAt: "2026-06-01", VerifiedBy: "https://docs.anthropic.com/en/api/openai-sdk"}
		an.Failover = failover([]string{"oa"}, "5xx")

		mtls := openAIProvider(mtlsURL, "", "pool-llama")
		mtls.TLS = &testkit.TLS{CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}
		mtls.Headers = map[string]string{"X-Static-Mtls": "mtls"}
		mtls.Aliases = map[string]string{"native-mtls": "pool-llama"}
		mtls.Channels = nativeChannel("openai", "chat_completions")

		return testkit.Policy{
			Providers: map[string]testkit.Provider{"oa": oa, "backup": backup, "an": an, "mtls": mtls},
			Primary: map[string]string{"native-native": "oa", "native-compat": "oa", "native-mtls": "oa",
				"native-translated": "an", "compat-native": "an"},
			Profiles: map[string]testkit.Profile{"default": {}},
			Keys:     []testkit.Key{clientKey("default", "default", keyDefault)},
		}
	}
}

// upstreamWant is what one upstream must have received, and nothing more
// of anyone else's.
type upstreamWant struct {
	fake *fakeprovider.Server
	// auth is the one credential header and value it gets; "" for none.
	authName, authValue string
	// static are its own static headers; every other X-Static-* is
	// someone else's.
	static  map[string]string
	dialect plan.Dialect
	path    string
}

// TestCredentialIsolationAcrossTiers: for every pair of tiers a failover
// crosses, streamed and not, the failed primary and the target each
// received exactly their own credential in their own channel's scheme (none
// at all for the client-certificate upstream), their own static headers
// and only those of their channel's dialect (the client's included: the
// OpenAI client's anthropic-beta reaches no OpenAI upstream), and never the
// client's key or another provider's secret. The OpenAI-compatible channel of the
// Anthropic provider is sent Authorization: Bearer: the fake refuses
// x-api-key there, as that endpoint does, so the old behaviour fails here.
func TestCredentialIsolationAcrossTiers(t *testing.T) {
	pki := testkit.NewPKI(t)
	mtls, mtlsURL := fakeprovider.StartTLS(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, CertAuth: true},
		fakeprovider.TLSOptions{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, ClientCAFile: pki.CAFile})
	e := startWith(t, isolationPolicy(mtlsURL, pki))

	oa := upstreamWant{e.openai, "Authorization", "Bearer " + secretOpenAI,
		map[string]string{"Openai-Organization": "org-oa", "X-Static-Oa": "oa"}, plan.DialectOpenAI, "/v1/chat/completions"}
	backup := upstreamWant{e.backup, "Authorization", "Bearer " + secretBackup,
		map[string]string{"X-Static-Backup": "backup"}, plan.DialectOpenAI, "/v1/chat/completions"}
	// Only Anthropic clients reach it, and the anthropic-version their
	// body was written for passes as sent (the static one fills in when a
	// client sends none).
	anNative := upstreamWant{e.anthropic, "X-Api-Key", secretAnthropic,
		map[string]string{"Anthropic-Beta": "beta-an", "X-Static-An": "an"}, plan.DialectAnthropic, "/v1/messages"}
	anCompat := upstreamWant{e.anthropic, "Authorization", "Bearer " + secretAnthropic,
		map[string]string{"X-Static-An": "an", "X-Static-An-Compat": "compat"}, plan.DialectOpenAI, "/v1/chat/completions"}
	pool := upstreamWant{mtls, "", "", map[string]string{"X-Static-Mtls": "mtls"}, plan.DialectOpenAI, "/v1/chat/completions"}

	pairs := []struct {
		name            string
		model           string
		anthropicClient bool
		from, to        upstreamWant
		servedBy        string
	}{
		{"native to native", "native-native", false, oa, backup, "backup"},
		{"native to compat", "native-compat", false, oa, anCompat, "an"},
		{"native to translated", "native-translated", true, anNative, oa, "oa"},
		{"compat to native", "compat-native", false, anCompat, oa, "oa"},
		{"header credential to client certificate", "native-mtls", false, oa, pool, "mtls"},
	}
	for _, p := range pairs {
		for _, stream := range []bool{false, true} {
			name := p.name
			if stream {
				name += ", streamed"
			}
			t.Run(name, func(t *testing.T) {
				for _, f := range []*fakeprovider.Server{e.openai, e.backup, e.anthropic, mtls} {
					f.Reset()
					e.setFaults(f, fakeprovider.Faults{})
				}
				e.setFaults(p.from.fake, fakeprovider.Faults{FailStatus: http.StatusServiceUnavailable})
				var served string
				if p.anthropicClient {
					served = anthropicAsk(t, e, p.model, stream)
				} else {
					served = openAIAsk(t, e, p.model, stream)
				}
				if served != p.servedBy {
					t.Errorf("served by %q, want %q", served, p.servedBy)
				}
				from, to := onlyCall(t, p.from), onlyCall(t, p.to)
				if p.from.fake == p.to.fake {
					t.Fatal("a pair on one fake cannot tell its calls apart")
				}
				checkReceived(t, "the failed primary", p.from, from)
				checkReceived(t, "the failover target", p.to, to)
			})
		}
	}
}

// TestMisSchemeIsRefusedUpstream replays the tester's report with the
// scheme forced: an OpenAI-compatible channel told to send x-api-key (what
// the provider's native dialect wants) is refused by the upstream with a
// 401, which reaches the OpenAI client as an authentication error. The
// fake holds each endpoint to its own scheme, so a gateway that sends the
// wrong one cannot pass a test against it.
func TestMisSchemeIsRefusedUpstream(t *testing.T) {
	pki := testkit.NewPKI(t)
	_, mtlsURL := fakeprovider.StartTLS(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, CertAuth: true},
		fakeprovider.TLSOptions{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, ClientCAFile: pki.CAFile})
	e := startWith(t, func(p policy) testkit.Policy {
		forced := isolationPolicy(mtlsURL, pki)(p)
		compat := forced.Providers["an"].Channels["compat"]
		compat.Auth = "x-api-key"
		forced.Providers["an"].Channels["compat"] = compat
		return forced
	})
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: http.StatusServiceUnavailable})
	client := e.openaiClient(keyDefault)
	_, err := client.Chat.Completions.New(context.Background(), chatParams("native-compat"))
	wantOpenAIError(t, err, http.StatusUnauthorized, "invalid_api_key")
	call := lastCall(t, e.anthropic)
	if call.Path != "/v1/chat/completions" || call.Header.Get("X-Api-Key") != secretAnthropic || call.Header.Get("Authorization") != "" {
		t.Errorf("the compatible endpoint was not sent x-api-key alone: %s", call.Path)
	}
}

// onlyCall is the one call w's fake received.
func onlyCall(t *testing.T, w upstreamWant) fakeprovider.Recorded {
	t.Helper()
	calls := w.fake.Requests()
	if len(calls) != 1 {
		t.Fatalf("the fake behind %s received %d calls, want 1", w.path, len(calls))
	}
	return calls[0]
}

// checkReceived holds what an upstream received to w.
func checkReceived(t *testing.T, who string, w upstreamWant, got fakeprovider.Recorded) {
	t.Helper()
	if got.Path != w.path {
		t.Errorf("%s was sent %s, want %s", who, got.Path, w.path)
	}
	for _, name := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		want := ""
		if name == w.authName {
			want = w.authValue
		}
		if v := strings.Join(got.Header.Values(name), ","); v != want {
			t.Errorf("%s received %s %q, want %q", who, name, redact(v), redact(want))
		}
	}
	own := map[string]bool{w.authValue: true}
	for name, vs := range got.Header {
		for _, v := range vs {
			for _, secret := range append([]string{keyDefault}, secretOpenAI, secretBackup, secretAnthropic) {
				if strings.Contains(v, secret) && !own[v] {
					t.Errorf("%s received a credential outside its own credential header, in %s", who, name)
				}
			}
		}
		if strings.HasPrefix(name, "X-Static-") && w.static[name] == "" {
			t.Errorf("%s received another provider's static header %s", who, name)
		}
		if d := plan.HeaderDialect(name); d != "" && d != w.dialect {
			t.Errorf("%s (%s dialect) received %s, meant for %s upstreams", who, w.dialect, name, d)
		}
	}
	for name, v := range w.static {
		if got.Header.Get(name) != v {
			t.Errorf("%s received %s %q, want its own %q", who, name, got.Header.Get(name), v)
		}
	}
}

// redact shows whose credential a value is without printing it.
func redact(v string) string {
	for name, secret := range map[string]string{"client key": keyDefault, "oa's": secretOpenAI, "backup's": secretBackup, "an's": secretAnthropic} {
		v = strings.ReplaceAll(v, secret, "<"+name+">")
	}
	return v
}

// openAIAsk sends a chat completion with the OpenAI SDK and returns the
// provider that served it. It also sends anthropic-beta, as a client
// sharing its HTTP settings between both SDKs may: checkReceived holds
// every OpenAI-dialect upstream to not receiving it.
func openAIAsk(t *testing.T, e *env, model string, stream bool) string {
	t.Helper()
	client := e.openaiClient(keyDefault, option.WithHeader("Anthropic-Beta", "client-beta"))
	var resp *http.Response
	if !stream {
		got, err := client.Chat.Completions.New(context.Background(), chatParams(model), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
			t.Errorf("reply %q", got.Choices[0].Message.Content)
		}
		return resp.Header.Get("Pistra-Provider")
	}
	s := client.Chat.Completions.NewStreaming(context.Background(), chatParams(model), option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) == 0 || acc.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
		t.Errorf("streamed reply %+v", acc.Choices)
	}
	return resp.Header.Get("Pistra-Provider")
}

// anthropicAsk is openAIAsk with the Anthropic SDK.
func anthropicAsk(t *testing.T, e *env, model string, stream bool) string {
	t.Helper()
	client := e.anthropicClient(keyDefault)
	var resp *http.Response
	if !stream {
		got, err := client.Messages.New(context.Background(), messageParams(model), aoption.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if replyOf(got) != fakeprovider.ReplyText(prompt) {
			t.Errorf("reply %q", replyOf(got))
		}
		return resp.Header.Get("Pistra-Provider")
	}
	s := client.Messages.NewStreaming(context.Background(), messageParams(model), aoption.WithResponseInto(&resp))
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if replyOf(&msg) != fakeprovider.ReplyText(prompt) {
		t.Errorf("streamed reply %q", replyOf(&msg))
	}
	return resp.Header.Get("Pistra-Provider")
}

// TestStartListsEveryUnsetCredential: a gateway whose environment lacks
// several credential variables refuses to start naming every one with the
// provider that needs it, not the first alone.
func TestStartListsEveryUnsetCredential(t *testing.T) {
	g := compilePolicy(t, policy{OpenAI: "http://127.0.0.1:1/v1", Backup: "http://127.0.0.1:2/v1",
		Anthropic: "http://127.0.0.1:3/v1", Dead: "http://127.0.0.1:4/v1"})
	_, err := server.New(server.Options{
		PublicAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: adminToken,
		Load:      func() (*plan.Graph, string, error) { return g, "test", nil },
		LookupEnv: func(k string) (string, bool) { return "", k == "E2E_BACKUP_KEY" },
	})
	if err == nil {
		t.Fatal("the gateway started without its credentials")
	}
	for _, want := range []string{`E2E_OPENAI_KEY (provider "up-openai")`, `E2E_BACKUP_KEY (provider "backup-openai")`, `E2E_ANTHROPIC_KEY (provider "up-anthropic")`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start-up error %q does not name %s", err, want)
		}
	}
}

// TestTLSFilesAreReadAtEachLoad: a provider's certificate files are read
// when a policy is loaded, not once for the process: a reload that finds
// the client certificate broken is refused naming the provider and the
// file (the running snapshot keeps its certificate and keeps serving),
// and a reload after the certificate is rotated presents the new one.
func TestTLSFilesAreReadAtEachLoad(t *testing.T) {
	pki := testkit.NewPKI(t)
	mtls, mtlsURL := fakeprovider.StartTLS(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, CertAuth: true},
		fakeprovider.TLSOptions{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, ClientCAFile: pki.CAFile})
	e := startWith(t, isolationPolicy(mtlsURL, pki))
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: http.StatusServiceUnavailable})
	presented := func() *big.Int {
		t.Helper()
		if served := openAIAsk(t, e, "native-mtls", false); served != "mtls" {
			t.Fatalf("served by %q", served)
		}
		c := lastCall(t, mtls).ClientCert
		if c == nil {
			t.Fatal("no client certificate presented")
		}
		return c.SerialNumber
	}
	first := presented()

	if err := os.WriteFile(pki.ClientCert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if status := e.reload(); status == http.StatusOK {
		t.Fatal("a reload with a broken client certificate was applied")
	}
	if msg := e.srv.Status().LastReloadError; !strings.Contains(msg, `provider "mtls"`) || !strings.Contains(msg, pki.ClientCert) {
		t.Errorf("reload error %q names neither the provider nor the file", msg)
	}
	if got := presented(); got.Cmp(first) != 0 {
		t.Errorf("after a refused reload the certificate presented changed")
	}

	pki.Issue("client", x509.ExtKeyUsageClientAuth) // rotated in place, same paths
	if status := e.reload(); status != http.StatusOK {
		t.Fatalf("reload after rotation: %d (%s)", status, e.srv.Status().LastReloadError)
	}
	if got := presented(); got.Cmp(first) == 0 {
		t.Errorf("after the reload the old certificate is still presented")
	}
}
