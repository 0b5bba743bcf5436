package metrics

import (
	"math"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/meter"
)

func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return testkit.Scrape(t, rec.Body)
}

// TestGenAIHistograms reads the GenAI histograms back from a scrape: the
// conventions' names, their bucket boundaries exactly, and the labels
// each series carries, nothing more.
func TestGenAIHistograms(t *testing.T) {
	m := New()
	m.Served(&Served{Operation: "chat", Provider: "openai", RequestModel: "gpt", ResponseModel: "gpt-4o-mini",
		Duration: 2 * time.Second, FirstToken: 500 * time.Millisecond, OutputTokens: 31})
	m.Served(&Served{Operation: "chat", Provider: NoProvider, RequestModel: OtherModel, ErrorType: "model_not_found",
		Duration: time.Millisecond})
	m.Attempt("chat", "openai", "gpt-4o-mini", "", time.Second, 300*time.Millisecond)
	m.Attempt("chat", "openai", "gpt-4o-mini", "5xx", 20*time.Millisecond, 0)
	m.Tokens("chat", "openai", "gpt-4o-mini", &meter.Usage{InputTokens: 100, OutputTokens: 31, CachedInputTokens: 64, Reported: true})
	fams := scrape(t, m)

	served := map[string]string{labelOperation: "chat", labelProvider: "openai", labelRequestModel: "gpt", labelResponseModel: "gpt-4o-mini"}
	failedAttempt := map[string]string{labelOperation: "chat", labelProvider: "openai", labelRequestModel: "gpt-4o-mini", labelErrorType: "5xx"}
	okAttempt := map[string]string{labelOperation: "chat", labelProvider: "openai", labelRequestModel: "gpt-4o-mini", labelErrorType: ""}
	client := map[string]string{labelOperation: "chat", labelProvider: "openai", labelRequestModel: "gpt-4o-mini"}
	for _, h := range []struct {
		name    string
		labels  map[string]string
		buckets []float64
		sum     float64
	}{
		{"gen_ai_server_request_duration_seconds", testkit.WithLabel(served, labelErrorType, ""), durationSpec, 2},
		{"gen_ai_server_request_duration_seconds", map[string]string{labelOperation: "chat", labelProvider: "none",
			labelRequestModel: "_OTHER", labelResponseModel: "", labelErrorType: "model_not_found"}, durationSpec, 0.001},
		{"gen_ai_server_time_to_first_token_seconds", served, ttftSpec, 0.5},
		{"gen_ai_server_time_per_output_token_seconds", served, tpotSpec, 1.5 / 30},
		{"gen_ai_client_operation_duration_seconds", okAttempt, durationSpec, 1},
		{"gen_ai_client_operation_duration_seconds", failedAttempt, durationSpec, 0.02},
		{"gen_ai_client_operation_time_to_first_chunk_seconds", client, durationSpec, 0.3},
		{"gen_ai_client_token_usage", testkit.WithLabel(client, labelTokenType, "input"), tokenSpec, 100},
		{"gen_ai_client_token_usage", testkit.WithLabel(client, labelTokenType, "output"), tokenSpec, 31},
	} {
		if fams[h.name].GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("%s is %v, want a histogram", h.name, fams[h.name].GetType())
			continue
		}
		got := testkit.Series(t, fams, h.name, h.labels).GetHistogram()
		if b := testkit.Bounds(got); !slices.Equal(b, h.buckets) {
			t.Errorf("%s buckets %v, want %v", h.name, b, h.buckets)
		}
		if got.GetSampleCount() != 1 || math.Abs(got.GetSampleSum()-h.sum) > 1e-9 {
			t.Errorf("%s%v: %d samples summing %v, want 1 of %v", h.name, h.labels, got.GetSampleCount(), got.GetSampleSum(), h.sum)
		}
	}
	// A failed request has no time to first token, and an attempt that
	// did not stream no time to first chunk.
	if n := len(fams["gen_ai_server_time_to_first_token_seconds"].GetMetric()); n != 1 {
		t.Errorf("%d time to first token series, want the successful request's only", n)
	}
	if n := fams["gen_ai_client_operation_time_to_first_chunk_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("time to first chunk observed %d times, want the streamed attempt's once", n)
	}
	// The token counter keeps its name and labels beside the histogram.
	if v := testkit.Series(t, fams, "gen_ai_client_token_usage_total", map[string]string{labelProvider: "openai",
		labelRequestModel: "gpt-4o-mini", labelTokenType: "cached_input"}).GetCounter().GetValue(); v != 64 {
		t.Errorf("cached_input tokens %v, want 64", v)
	}
}

// The conventions' advice, written out again so that a change to the
// buckets in genai.go is a failing test, not a silent one.
var (
	durationSpec = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	ttftSpec     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	tpotSpec     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	tokenSpec    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

func TestModelLabel(t *testing.T) {
	names := []string{"claude", "gpt", "gpt-mini"}
	for in, want := range map[string]string{"gpt": "gpt", "claude": "claude", "gpt-min": OtherModel, "": OtherModel, "zzz": OtherModel} {
		if got := ModelLabel(names, in); got != want {
			t.Errorf("ModelLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

type fakeHealth struct {
	ledger    *Ledger
	degraded  bool
	lastFlush time.Time
}

func (f fakeHealth) Ledger() (Ledger, bool) {
	if f.ledger == nil {
		return Ledger{}, false
	}
	return *f.ledger, true
}
func (f fakeHealth) Flushes() (bool, time.Time) { return f.degraded, f.lastFlush }
func (f fakeHealth) Circuits(dst []Circuit) []Circuit {
	return append(dst, Circuit{Provider: "openai", State: 1}, Circuit{Provider: "anthropic", State: 0})
}

// TestHealthGauges: the ledger's, the flushes' and the breakers' gauges
// are read from Health at the scrape; without a durable ledger there is
// no raft series at all.
func TestHealthGauges(t *testing.T) {
	m := New()
	m.Bundle("sha256:old", "unsigned")
	m.Bundle("sha256:abc", "k1")
	m.ReadHealth(fakeHealth{ledger: &Ledger{Ready: true, HasLeader: true, Term: 7, CommitIndex: 42, AppliedIndex: 41,
		LastContact: 1500 * time.Millisecond, Voters: 3}, degraded: true, lastFlush: time.Now().Add(-2 * time.Second)})
	fams := scrape(t, m)
	gauge := func(name string, labels map[string]string) float64 {
		t.Helper()
		return testkit.Series(t, fams, name, labels).GetGauge().GetValue()
	}
	for name, want := range map[string]float64{"pistra_raft_ready": 1, "pistra_raft_has_leader": 1, "pistra_raft_is_leader": 0,
		"pistra_raft_term": 7, "pistra_raft_commit_index": 42, "pistra_raft_applied_index": 41,
		"pistra_raft_last_contact_seconds": 1.5, "pistra_raft_voters": 3, "pistra_ledger_degraded": 1} {
		if got := gauge(name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if age := gauge("pistra_ledger_last_flush_age_seconds", nil); age < 2 || age > 60 {
		t.Errorf("last flush age %v, want about 2s", age)
	}
	if gauge("pistra_circuit_state", map[string]string{"provider": "openai"}) != 1 ||
		gauge("pistra_circuit_state", map[string]string{"provider": "anthropic"}) != 0 {
		t.Error("circuit states not as Health gave them")
	}
	if gauge("pistra_bundle_info", map[string]string{"digest": "sha256:abc", "signed_by": "k1"}) != 1 ||
		len(fams["pistra_bundle_info"].GetMetric()) != 1 {
		t.Errorf("bundle info %v, want the last bundle's only", fams["pistra_bundle_info"].GetMetric())
	}
	if fams["pistra_build_info"] == nil {
		t.Error("no pistra_build_info")
	}

	m.ReadHealth(fakeHealth{})
	fams = scrape(t, m)
	if _, ok := fams["pistra_raft_term"]; ok {
		t.Error("raft series without a durable ledger")
	}
	if _, ok := fams["pistra_ledger_last_flush_age_seconds"]; ok {
		t.Error("a flush age before the first flush")
	}
}
