package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestExposition checks the series names and labels the product contract
// fixes, as a scraper sees them.
func TestExposition(t *testing.T) {
	m := New()
	m.Request("chat_completions", "openai", 200, 30*time.Millisecond)
	m.Request("messages", NoProvider, 1000, time.Millisecond) // out of table: still labelled
	m.Retry("openai", "5xx")
	m.Failover("openai", "anthropic", "429")
	m.Downgrade("vendor", "openai-compat", "strict_tools", DowngradeSkipped)
	m.Downgrade("vendor", "openai-compat", "strict_tools", DowngradeSkipped)
	m.Downgrade("relay", "compat", "multi_choice", DowngradeAllowed)
	m.Downgrade("relay", "compat", "audio_input", DowngradeRejected)
	m.Panic()
	m.Reload(false)
	m.PoolPick("vllm", "refused")
	m.PoolMembers("vllm", "", 3, 1500*time.Millisecond)
	m.PoolMembers("vllm", "h100", 1, 0)
	m.PoolMembers("gone", "", 2, 0)
	m.PoolGone("gone", "")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`pistra_requests_total{code="200",provider="openai",route="chat_completions"} 1`,
		`pistra_requests_total{code="1000",provider="none",route="messages"} 1`,
		`pistra_request_duration_seconds_bucket{code="200",provider="openai",route="chat_completions",le="0.05"} 1`,
		`pistra_retry_total{provider="openai",reason="5xx"} 1`,
		`pistra_failover_total{from="openai",reason="429",to="anthropic"} 1`,
		`pistra_channel_downgrade_total{action="skipped",cap="strict_tools",channel="openai-compat",provider="vendor"} 2`,
		`pistra_channel_downgrade_total{action="allowed",cap="multi_choice",channel="compat",provider="relay"} 1`,
		`pistra_channel_downgrade_total{action="rejected",cap="audio_input",channel="compat",provider="relay"} 1`,
		`pistra_panics_total 1`,
		`pistra_reloads_total{result="refused"} 1`,
		`pistra_pool_picks_total{outcome="refused",provider="vllm"} 1`,
		`pistra_pool_members{provider="vllm",subset=""} 3`,
		`pistra_pool_members{provider="vllm",subset="h100"} 1`,
		`pistra_pool_members_age_seconds{provider="vllm",subset=""} 1.5`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("exposition lacks %s", want)
		}
	}
	if strings.Contains(string(body), `provider="gone"`) {
		t.Error("a member set PoolGone removed is still exposed")
	}
}
