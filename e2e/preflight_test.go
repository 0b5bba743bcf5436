package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/testkit"
)

// preflight posts body, marshalled exactly as the SDK would send it, to
// url with the given header, and returns the status and raw answer.
func (e *env) preflight(url string, header http.Header, body any) (int, []byte) {
	e.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, out
}

func decodeAnswer(t *testing.T, status int, b []byte) testkit.Preflight {
	t.Helper()
	var a testkit.Preflight
	if status == http.StatusOK {
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("preflight answer %s: %v", b, err)
		}
	}
	return a
}

// adminPreflight asks the admin preflight on key's behalf; route may be
// empty for the default.
func (e *env) adminPreflight(key, route string, body any) (int, testkit.Preflight) {
	e.t.Helper()
	url := "http://" + e.srv.AdminAddr() + "/admin/v1/preflight?key=" + key
	if route != "" {
		url += "&route=" + route
	}
	status, b := e.preflight(url, http.Header{"Authorization": {"Bearer " + adminToken}}, body)
	return status, decodeAnswer(e.t, status, b)
}

// TestPreflightMatchesRequest: for each request, preflight names the
// provider, channel origin and upstream model the real request then uses,
// or refuses with the very error the real request gets.
func TestPreflightMatchesRequest(t *testing.T) {
	tests := []struct {
		name, key string
		params    openai.ChatCompletionNewParams
		provider  string // "" when refused
		lost      string
	}{
		{"strict tools pass the compat channel", keyDefault, strictParams("tools"), "native-openai", ""},
		{"plain request stays on it", keyDefault, chatParams("tools"), "vendor", ""},
		{"allow serves the least lossy", keyLenient, everythingParams("compat-only"), "relay", "multi_choice"},
		{"reject refuses", keyDefault, everythingParams("compat-only"), "", ""},
		{"unknown model", keyDefault, chatParams("no-such-model"), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startWith(t, fidelityPolicy)
			status, raw := e.preflight(e.baseURL()+"preflight", http.Header{"Authorization": {"Bearer " + tt.key}}, tt.params)
			ans := decodeAnswer(t, status, raw)
			if n := len(e.openai.Requests()) + len(e.backup.Requests()); n != 0 {
				t.Fatalf("preflight reached an upstream %d times", n)
			}

			client := e.openaiClient(tt.key)
			var resp *http.Response
			_, err := client.Chat.Completions.New(context.Background(), tt.params, option.WithResponseInto(&resp))
			if tt.provider == "" {
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("want a refusal, got %v", err)
				}
				var pre struct {
					Error json.RawMessage `json:"error"`
				}
				if json.Unmarshal(raw, &pre) != nil || status != apiErr.StatusCode || string(pre.Error) != apiErr.RawJSON() {
					t.Fatalf("preflight %d %s\nrequest   %d %s", status, raw, apiErr.StatusCode, apiErr.RawJSON())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			served := resp.Header.Get("Pistra-Provider")
			upstream := e.openai
			if served == "relay" {
				upstream = e.backup
			}
			if ans.Performed || !strings.Contains(ans.Note, "no upstream call") || ans.Serve.Provider != served ||
				ans.Serve.Origin != resp.Header.Get("Pistra-Channel-Origin") || ans.Serve.Model != lastCall(t, upstream).Model ||
				served != tt.provider || strings.Join(ans.Serve.Lost, ",") != tt.lost || ans.Lossy != (tt.lost != "") {
				t.Fatalf("preflight %s\nrequest served by %q origin %q model %q", raw, served,
					resp.Header.Get("Pistra-Channel-Origin"), lastCall(t, upstream).Model)
			}
		})
	}
}

// TestPreflightAnswerContent: the answer spells out the decision: what the
// body uses, what was passed over and why, the profile's settings, and the
// provenance of the serving claim.
func TestPreflightAnswerContent(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	status, raw := e.preflight(e.baseURL()+"preflight?route=chat_completions", http.Header{"Authorization": {"Bearer " + keyDefault}}, strictParams("tools"))
	a := decodeAnswer(t, status, raw)
	if status != http.StatusOK || a.Route != "chat_completions" || a.Profile != "default" || a.OnFidelityLoss != "reject" ||
		len(a.RequireCaps) != 0 || !a.Capabilities.Read || strings.Join(a.Capabilities.Used, ",") != "strict_tools" {
		t.Fatalf("answer %s", raw)
	}
	if len(a.PassedOver) != 1 {
		t.Fatalf("passed over %+v", a.PassedOver)
	}
	p := a.PassedOver[0]
	if p.Provider != "vendor" || p.Tier != "provider_compat" || strings.Join(p.Lost, ",") != "strict_tools" ||
		p.Origin != vendorOrigin || p.VerifiedBy != vendorSource || p.VerifiedAt != "2026-11-20" {
		t.Errorf("passed over %+v", p)
	}
	if a.Serve.Provider != "native-openai" || a.Serve.Tier != "native" || a.Serve.Origin != nativeOrigin || a.Serve.Model != "gpt-4o" {
		t.Errorf("serve %+v", a.Serve)
	}
	if got := a.SkipReasons(); got != "relay/:not_served[]" {
		t.Errorf("static skips %q", got)
	}
}

// TestAdminPreflight: the admin asks on a named key's behalf with the admin
// token alone; a client key does not open it, an unknown key is named.
func TestAdminPreflight(t *testing.T) {
	e := startWith(t, fidelityPolicy)
	status, a := e.adminPreflight("lenient", "chat_completions", everythingParams("compat-only"))
	if status != http.StatusOK || a.Key != "lenient" || a.Profile != "lenient" || !a.Lossy || a.Serve.Provider != "relay" {
		t.Fatalf("admin preflight %d %+v", status, a)
	}
	if status, _ := e.adminPreflight("default", "", everythingParams("compat-only")); status != http.StatusBadRequest {
		t.Errorf("admin preflight for a rejecting key: %d", status)
	}
	status, b := e.preflight("http://"+e.srv.AdminAddr()+"/admin/v1/preflight?key=ghost",
		http.Header{"Authorization": {"Bearer " + adminToken}}, chatParams("tools"))
	if status != http.StatusNotFound || !strings.Contains(string(b), "ghost") {
		t.Errorf("unknown key: %d %s", status, b)
	}
	if status, _ := e.preflight("http://"+e.srv.AdminAddr()+"/admin/v1/preflight?key=lenient",
		http.Header{"Authorization": {"Bearer " + keyLenient}}, chatParams("tools")); status != http.StatusUnauthorized {
		t.Errorf("a client key opened the admin preflight: %d", status)
	}
	status, b = e.preflight("http://"+e.srv.AdminAddr()+"/admin/v1/preflight?key=default",
		http.Header{"Authorization": {"Bearer " + adminToken}, "Anthropic-Version": {"2023-06-01"}}, messageParams("claude-haiku-4-5"))
	if a := decodeAnswer(t, status, b); status != http.StatusOK || a.Route != "messages" || a.Serve.Provider != "claude-compat" {
		t.Errorf("anthropic caller: %d %s", status, b)
	}
}
