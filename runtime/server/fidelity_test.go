package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

// Provenance of the compat channel's claim in fidelityGraph.
const (
	vendorOrigin     = testkit.VendorOrigin
	vendorVerifiedBy = testkit.VendorVerifiedBy
)

// fidelityGraph serves "tools" from a compat channel of "vendor" (keeping
// structured output only) with a native channel of "oa" behind it, and
// "compat" from the compat channel alone. Profile "default" rejects lossy
// serving, "lenient" allows it.
func fidelityGraph() *plan.Graph {
	b := testkit.NewGraph("sha256:fidelity")
	compat, native := b.CompatAndNative(plan.RouteChatCompletions)
	table := b.Table(
		plan.Entry{Route: plan.RouteChatCompletions, Model: "tools", Plan: b.Plan(plan.Plan{Listed: true}, []plan.Candidate{compat, native}, nil)},
		plan.Entry{Route: plan.RouteChatCompletions, Model: "compat", Plan: b.Plan(plan.Plan{Listed: true}, []plan.Candidate{compat}, nil)},
	)
	b.Key("default", "k-default", b.Profile(plan.Profile{Name: "default", Table: table}))
	b.Key("lenient", "k-lenient", b.Profile(plan.Profile{Name: "lenient", Table: table, OnFidelityLoss: "allow"}))
	return b.Build()
}

// fidelityServer serves fidelityGraph against an always-OK upstream and
// keeps its log lines.
func fidelityServer(t *testing.T) (*Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	g := fidelityGraph()
	s, err := New(Options{
		AdminToken: "t",
		Load:       func() (*plan.Graph, string, error) { return g, "test", nil },
		LookupEnv:  func(string) (string, bool) { return "", false },
		Logger:     slog.New(slog.NewJSONHandler(&logs, nil)),
		Upstream:   okUpstream(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, &logs
}

// downgrades reads pistra_channel_downgrade_total for one label set.
func downgrades(t *testing.T, s *Server, provider, channel, c, action string) float64 {
	t.Helper()
	return testkit.Counter(t, s.Metrics().Registry(), "pistra_channel_downgrade_total",
		map[string]string{"provider": provider, "channel": channel, "cap": c, "action": action})
}

// Request bodies: one with a strict function tool, one without any
// capability (the word strict only in the text).
const (
	strictBody = `{"model":%q,"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object"}}}]}`
	plainBody = `{"model":%q,"messages":[{"role":"user","content":"be \"strict\": true about it"}]}`
)

func body(format, model string) string { return strings.Replace(format, "%q", `"`+model+`"`, 1) }

// TestFidelitySelection drives real requests through selection: the
// served provider, the origin header and log field, the structured refusal
// and the downgrade counter.
func TestFidelitySelection(t *testing.T) {
	tests := []struct {
		name, key, model, body string
		status                 int
		provider, origin       string
		skipped, allowed, rej  float64
	}{
		{"plain request takes the compat channel", "k-default", "tools", plainBody, 200, "vendor", vendorOrigin, 0, 0, 0},
		{"strict request skips past it", "k-default", "tools", strictBody, 200, "oa", "native", 1, 0, 0},
		{"strict request with only compat left is refused", "k-default", "compat", strictBody, 400, "", vendorOrigin, 0, 0, 1},
		{"allow forwards lossy", "k-lenient", "compat", strictBody, 200, "vendor", vendorOrigin, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, logs := fidelityServer(t)
			rec := s.do(publicRequest{"POST", "/v1/chat/completions", body(tt.body, tt.model),
				map[string]string{"Authorization": "Bearer " + tt.key}})
			if rec.Code != tt.status || rec.Header().Get("Pistra-Provider") != tt.provider {
				t.Fatalf("status %d provider %q, want %d %q: %s", rec.Code, rec.Header().Get("Pistra-Provider"), tt.status, tt.provider, rec.Body)
			}
			if rec.Header().Get("Pistra-Channel-Origin") != tt.origin {
				t.Errorf("origin header %q, want %q", rec.Header().Get("Pistra-Channel-Origin"), tt.origin)
			}
			if !strings.Contains(logs.String(), `"pistra.channel_origin":"`+tt.origin+`"`) {
				t.Errorf("log lacks origin %q: %s", tt.origin, logs)
			}
			for action, want := range map[string]float64{"skipped": tt.skipped, "allowed": tt.allowed, "rejected": tt.rej} {
				if got := downgrades(t, s, "vendor", "openai-compat", "strict_tools", action); got != want {
					t.Errorf("downgrade %s = %v, want %v", action, got, want)
				}
			}
			if tt.status == 400 {
				checkRefusal(t, rec.Body.Bytes())
			}
		})
	}
}

// checkRefusal reads the OpenAI-shape fidelity refusal: standard members,
// and error.pistra naming the compat channel, what it drops and its source.
func checkRefusal(t *testing.T, b []byte) {
	t.Helper()
	var got struct {
		Error struct {
			Message string  `json:"message"`
			Code    string  `json:"code"`
			Param   *string `json:"param"`
			Pistra  struct {
				Used       []string `json:"used"`
				Candidates []struct {
					Provider, Channel, Tier, Origin string
					VerifiedBy                      string   `json:"verified_by"`
					Lost                            []string `json:"lost"`
				} `json:"candidates"`
			} `json:"pistra"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	e := got.Error
	cs := e.Pistra.Candidates
	if e.Code != "fidelity_loss" || len(cs) != 1 || strings.Join(e.Pistra.Used, ",") != "strict_tools" {
		t.Fatalf("refusal %s", b)
	}
	c := cs[0]
	if c.Provider != "vendor" || c.Channel != "openai-compat" || c.Tier != "provider_compat" || c.Origin != vendorOrigin ||
		c.VerifiedBy != vendorVerifiedBy || strings.Join(c.Lost, ",") != "strict_tools" {
		t.Errorf("candidate %+v", c)
	}
	for _, want := range []string{"strict_tools", vendorOrigin, vendorVerifiedBy, `"openai-compat"`} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message lacks %q: %s", want, e.Message)
		}
	}
}

// TestExchangeReaderIsPerRequest: a pooled exchange's reader answers for
// its own request, never for the one before.
func TestExchangeReaderIsPerRequest(t *testing.T) {
	s, _ := fidelityServer(t)
	for i, tc := range []struct {
		body, provider string
	}{{strictBody, "oa"}, {plainBody, "vendor"}, {strictBody, "oa"}} {
		rec := s.do(publicRequest{"POST", "/v1/chat/completions", body(tc.body, "tools"),
			map[string]string{"Authorization": "Bearer k-default"}})
		if got := rec.Header().Get("Pistra-Provider"); got != tc.provider {
			t.Errorf("request %d served by %q, want %q", i, got, tc.provider)
		}
	}
	if got := downgrades(t, s, "vendor", "openai-compat", "strict_tools", "skipped"); got != 2 {
		t.Errorf("skipped = %v, want 2", got)
	}
}
