package server

import (
	"net/http"
	"strings"
	"testing"
)

var (
	fuzzPaths = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/messages", "/v1/models", "/v1/models/gpt", "/v1/x",
		"/v1/preflight", "/v1/preflight?route=messages", "/v1/preflight?route=bogus"}
	fuzzMethods = []string{"POST", "GET", "PUT"}
	fuzzAuth    = []map[string]string{
		{},
		{"Authorization": "Bearer k-default"},
		{"Authorization": "Bearer k-narrow"},
		{"X-Api-Key": "k-default"},
		{"Authorization": "Basic k-default"},
	}
)

// FuzzPublicRequest throws arbitrary bodies and header values at the
// public handler: it must never panic, always answer, and answer every
// refusal in a dialect's error shape with a pistra code.
func FuzzPublicRequest(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(1), "application/json", "", []byte(`{"model":"gpt"}`))
	f.Add(uint8(4), uint8(0), uint8(3), "application/json", "2023-06-01", []byte(`{"model":"claude","x":[{"model":1}]}`))
	f.Add(uint8(2), uint8(0), uint8(1), "application/json; charset=utf-8", "", []byte(`{"model":"embed"}`))
	f.Add(uint8(0), uint8(0), uint8(1), "", "", []byte(`{"model":"gpt","model":"gpt"}`))
	f.Add(uint8(5), uint8(1), uint8(3), "", "2026-10-21", []byte(nil))
	s := newTestServer(f, okUpstream().Unrecorded())
	f.Fuzz(func(t *testing.T, path, method, auth uint8, contentType, version string, body []byte) {
		h := map[string]string{"Content-Type": contentType}
		for k, v := range fuzzAuth[int(auth)%len(fuzzAuth)] {
			h[k] = v
		}
		if version != "" {
			h["Anthropic-Version"] = version
		}
		req := publicRequest{fuzzMethods[int(method)%len(fuzzMethods)], fuzzPaths[int(path)%len(fuzzPaths)], string(body), h}
		rec := s.do(req)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		if rec.Code >= 400 {
			if code, _ := errorCode(t, rec.Body.Bytes()); code == "" {
				t.Fatalf("%d without a pistra code: %s", rec.Code, rec.Body)
			}
		}
		if strings.HasPrefix(req.path, "/v1/") && req.path != "/v1/x" && rec.Header().Get("Pistra-Request-Id") == "" {
			t.Fatalf("no request id on %s", req.path)
		}
		if rec.Code == http.StatusOK && rec.Body.Len() == 0 {
			t.Fatalf("empty 200")
		}
	})
}
