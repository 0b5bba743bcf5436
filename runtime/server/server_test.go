package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

type publicRequest struct {
	method, path, body string
	header             map[string]string
}

func (s *Server) do(pr publicRequest) *httptest.ResponseRecorder {
	req := httptest.NewRequest(pr.method, pr.path, strings.NewReader(pr.body))
	for k, v := range pr.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// errorCode reads the pistra code from either dialect's error shape.
func errorCode(t *testing.T, b []byte) (code string, anthropicShape bool) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Code    string `json:"code"`
			Details struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body is not JSON: %q", b)
	}
	if e.Type == "error" {
		return e.Error.Details.ErrorCode, true
	}
	return e.Error.Code, false
}

func TestPublicRoutes(t *testing.T) {
	s := newTestServer(t, okUpstream())
	bearer := map[string]string{"Authorization": "Bearer k-default", "Content-Type": "application/json"}
	narrow := map[string]string{"Authorization": "Bearer k-narrow"}
	anth := map[string]string{"X-Api-Key": "k-default", "Anthropic-Version": "2023-06-01"}
	tests := []struct {
		name      string
		req       publicRequest
		status    int
		code      string
		anthropic bool
	}{
		{"chat", publicRequest{"POST", "/v1/chat/completions", `{"model":"gpt"}`, bearer}, 200, "", false},
		{"messages with x-api-key", publicRequest{"POST", "/v1/messages", `{"model":"claude"}`, anth}, 200, "", false},
		{"models get", publicRequest{"GET", "/v1/models/gpt", "", narrow}, 200, "", false},
		{"models head", publicRequest{"HEAD", "/v1/models", "", narrow}, 200, "", false},
		{"405 carries Allow", publicRequest{"GET", "/v1/chat/completions", "", bearer}, 405, "method_not_allowed", false},
		{"models POST", publicRequest{"POST", "/v1/models", "", bearer}, 405, "method_not_allowed", false},
		{"unknown path", publicRequest{"GET", "/v2/nothing", "", nil}, 404, "route_not_found", false},
		{"unknown path, Anthropic caller", publicRequest{"GET", "/v1/nothing", "", anth}, 404, "route_not_found", true},
		{"over the bound", publicRequest{"POST", "/v1/chat/completions", `{"model":"gpt","p":"` + strings.Repeat("x", 5000) + `"}`, bearer}, 413, "request_too_large", false},
		{"not on route", publicRequest{"POST", "/v1/embeddings", `{"model":"gpt"}`, bearer}, 404, "model_not_on_route", false},
		{"not allowed", publicRequest{"POST", "/v1/embeddings", `{"model":"embed"}`, narrow}, 403, "model_not_allowed", false},
		{"unknown", publicRequest{"POST", "/v1/chat/completions", `{"model":"nope"}`, narrow}, 404, "model_not_found", false},
		{"OpenAI model on the Anthropic route", publicRequest{"POST", "/v1/messages", `{"model":"gpt"}`, anth}, 404, "model_not_on_route", true},
		{"json with params", publicRequest{"POST", "/v1/chat/completions", `{"model":"gpt"}`,
			map[string]string{"Authorization": "Bearer k-default", "Content-Type": "Application/JSON; charset=utf-8"}}, 200, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := s.do(tt.req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.code != "" {
				code, anthropicShape := errorCode(t, rec.Body.Bytes())
				if code != tt.code || anthropicShape != tt.anthropic {
					t.Fatalf("code %q (anthropic shape %v), want %q (%v)", code, anthropicShape, tt.code, tt.anthropic)
				}
			}
			if tt.status == 405 && rec.Header().Get("Allow") == "" {
				t.Errorf("405 without Allow")
			}
			if rec.Header().Get("Pistra-Request-Id") == "" {
				t.Errorf("no Pistra-Request-Id")
			}
		})
	}
}

func TestReadBodyBound(t *testing.T) {
	for _, tc := range []struct {
		size     int
		declared bool
		ok       bool
	}{{100, true, true}, {100, false, true}, {101, false, false}, {101, true, false}, {0, false, true}} {
		body := bytes.Repeat([]byte("a"), tc.size)
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		if !tc.declared {
			req.ContentLength = -1
		}
		buf := make([]byte, 0, 8)
		e := readBody(req, 100, &buf)
		if (e == nil) != tc.ok || (tc.ok && !bytes.Equal(buf, body)) {
			t.Errorf("size %d declared %v: err %v, read %d bytes", tc.size, tc.declared, e, len(buf))
		}
	}
}

func TestHeaderChecks(t *testing.T) {
	for v, ok := range map[string]bool{"2023-06-01": true, "2026-10-21": true, "2031-12-31": true,
		"2023-6-1": false, "latest": false, "2023-06-01x": false, "abcd-ef-gh": false} {
		if isDate(v) != ok {
			t.Errorf("isDate(%q) = %v", v, !ok)
		}
	}
	for ct, ok := range map[string]bool{"": true, "application/json": true, "application/json; charset=utf-8": true,
		"APPLICATION/JSON": true, "text/plain": false, "application/jsonx": false, "multipart/form-data; boundary=x": false} {
		req := httptest.NewRequest("POST", "/", nil)
		req.Header.Set("Content-Type", ct)
		if (checkContentType(req) == nil) != ok {
			t.Errorf("content type %q accepted = %v", ct, !ok)
		}
	}
	for id, keep := range map[string]bool{"req_abc-1.2:3": true, "": false, "bad id": false, strings.Repeat("a", 129): false, "x\ny": false} {
		req := httptest.NewRequest("POST", "/", nil)
		req.Header["X-Request-Id"] = []string{id}
		if got := requestIDOf(req); (got == id) != keep || !strings.HasPrefix(got, map[bool]string{true: id, false: "req_"}[keep]) {
			t.Errorf("request id for %q: %q", id, got)
		}
	}
}

// TestModelNotOnRouteNamesRoutes: a model refused on one route says where
// it does answer, on the request itself and on preflight alike.
func TestModelNotOnRouteNamesRoutes(t *testing.T) {
	s := newTestServer(t, okUpstream())
	bearer := map[string]string{"Authorization": "Bearer k-default", "Content-Type": "application/json"}
	for _, path := range []string{"/v1/embeddings", "/v1/preflight?route=embeddings"} {
		rec := s.do(publicRequest{"POST", path, `{"model":"gpt"}`, bearer})
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), "it answers on /v1/chat/completions") {
			t.Errorf("%s: %d %s, want 404 naming /v1/chat/completions", path, rec.Code, rec.Body)
		}
	}
}
