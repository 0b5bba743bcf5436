package fakeprovider_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// TestAuthSchemePerEndpoint: each endpoint takes the credential the way
// the real API does. OpenAI-dialect endpoints, Anthropic's
// OpenAI-compatible one included, take Authorization: Bearer only and
// refuse an x-api-key with OpenAI's 401 invalid_api_key; Anthropic's
// /v1/messages takes x-api-key, or Bearer as its current SDKs send it, and
// refuses with its own 401 authentication_error.
func TestAuthSchemePerEndpoint(t *testing.T) {
	_, openaiBase := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	_, anthropicBase := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey})
	const (
		chat     = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
		messages = `{"model":"claude-haiku-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	)
	endpoints := []struct {
		base, path, body string
		anthropic        bool // answers in Anthropic's shape, takes x-api-key
	}{
		{openaiBase, "/chat/completions", chat, false},
		{openaiBase, "/completions", `{"model":"gpt-3.5-turbo-instruct","prompt":"hi"}`, false},
		{openaiBase, "/embeddings", `{"model":"text-embedding-3-small","input":"hi"}`, false},
		{openaiBase, "/responses", `{"model":"m","input":"hi"}`, false},
		{anthropicBase, "/chat/completions", chat, false}, // the OpenAI-compatible layer
		{anthropicBase, "/messages", messages, true},
	}
	schemes := []struct {
		name   string
		header map[string]string
		// ok says whether an OpenAI-dialect and an Anthropic endpoint take it.
		openAIOK, anthropicOK bool
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + testKey}, true, true},
		{"x-api-key", map[string]string{"X-Api-Key": testKey}, false, true},
		{"api-key", map[string]string{"Api-Key": testKey}, false, false},
		{"bearer of another key", map[string]string{"Authorization": "Bearer sk-other"}, false, false},
		{"none", nil, false, false},
	}
	for _, ep := range endpoints {
		for _, sc := range schemes {
			t.Run(ep.base[len(ep.base)-8:]+ep.path+"/"+sc.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodPost, ep.base+ep.path, bytes.NewBufferString(ep.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Anthropic-Version", "2023-06-01")
				for k, v := range sc.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				ok := sc.openAIOK
				if ep.anthropic {
					ok = sc.anthropicOK
				}
				if ok {
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("status %d %s, want 200", resp.StatusCode, body)
					}
					return
				}
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("status %d %s, want 401", resp.StatusCode, body)
				}
				var shape struct {
					Type  string `json:"type"`
					Error struct {
						Type string  `json:"type"`
						Code *string `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(body, &shape); err != nil {
					t.Fatalf("401 body %s: %v", body, err)
				}
				if ep.anthropic {
					if shape.Type != "error" || shape.Error.Type != "authentication_error" {
						t.Errorf("401 body %s, want Anthropic's authentication_error", body)
					}
				} else if shape.Error.Code == nil || *shape.Error.Code != "invalid_api_key" || shape.Type != "" {
					t.Errorf("401 body %s, want OpenAI's invalid_api_key", body)
				}
			})
		}
	}
}

// TestCertAuth: a server behind mutual TLS admits the client holding a
// certificate of its CA with no key header at all, and refuses the
// handshake of a client without one or with another CA's.
func TestCertAuth(t *testing.T) {
	pki, other := testkit.NewPKI(t), testkit.NewPKI(t)
	s, base := fakeprovider.StartTLS(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, CertAuth: true},
		fakeprovider.TLSOptions{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, ClientCAFile: pki.CAFile})
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("base URL %s", base)
	}
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(pki.CAFile)
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal(err)
	}
	post := func(certFile, keyFile string) (*http.Response, error) {
		cfg := &tls.Config{RootCAs: roots}
		if certFile != "" {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		defer client.CloseIdleConnections()
		return client.Post(base+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	}
	resp, err := post(pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the client certificate and no key: status %d", resp.StatusCode)
	}
	if calls := s.Requests(); len(calls) != 1 || calls[0].Header.Get("Authorization") != "" {
		t.Errorf("recorded %+v", calls)
	}
	for name, cert := range map[string][2]string{"no certificate": {}, "another CA's": {other.ClientCert, other.ClientKey}} {
		if resp, err := post(cert[0], cert[1]); err == nil {
			resp.Body.Close()
			t.Errorf("%s: status %d, want the handshake refused", name, resp.StatusCode)
		}
	}
	if s.Calls() != 1 {
		t.Errorf("calls %d: a refused handshake reached the API", s.Calls())
	}
}
