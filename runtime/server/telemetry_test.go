package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/pistra/pistra/internal/testkit"
)

const (
	chunk      = `data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-upstream","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n"
	usageChunk = `data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-upstream","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}` + "\n\n"
)

func postStatus(t *testing.T, s *Server, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.PublicAddr()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k-default")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func scrapeServer(t *testing.T, s *Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + s.PublicAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return testkit.Scrape(t, resp.Body)
}

// TestGenAIMetricsFromAScrape: a streamed request and a refused one, then
// the scrape of a running server: each GenAI histogram has the series the
// request's record names, labelled by the catalog (a requested name the
// catalog lacks is _OTHER, not what the client typed), and a models
// listing counts in none of them.
func TestGenAIMetricsFromAScrape(t *testing.T) {
	up := testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {testkit.SSE(chunk, chunk, usageChunk, "data: [DONE]\n\n")}})
	g := testGraph()
	s := startOnLoopback(t, testOptions(g, up))
	if st := postStatus(t, s, "/v1/chat/completions", `{"model":"gpt","stream":true,"messages":[]}`); st != 200 {
		t.Fatalf("stream: status %d", st)
	}
	if st := postStatus(t, s, "/v1/chat/completions", `{"model":"no-such-model-`+strings.Repeat("x", 40)+`"}`); st != 404 {
		t.Fatalf("unknown model: status %d", st)
	}
	if resp, err := http.Get("http://" + s.PublicAddr() + "/v1/models"); err == nil {
		resp.Body.Close()
	}
	fams := scrapeServer(t, s)
	count := func(name string, labels map[string]string) uint64 {
		t.Helper()
		return testkit.Series(t, fams, name, labels).GetHistogram().GetSampleCount()
	}
	served := map[string]string{"gen_ai_operation_name": "chat", "gen_ai_provider_name": "oa",
		"gen_ai_request_model": "gpt", "gen_ai_response_model": "gpt-upstream"}
	attempt := map[string]string{"gen_ai_operation_name": "chat", "gen_ai_provider_name": "oa", "gen_ai_request_model": "gpt-upstream"}
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"gen_ai_server_request_duration_seconds", testkit.WithLabel(served, "error_type", "")},
		{"gen_ai_server_request_duration_seconds", map[string]string{"gen_ai_operation_name": "chat", "gen_ai_provider_name": "none",
			"gen_ai_request_model": "_OTHER", "gen_ai_response_model": "", "error_type": "model_not_found"}},
		{"gen_ai_server_time_to_first_token_seconds", served},
		{"gen_ai_server_time_per_output_token_seconds", served},
		{"gen_ai_client_operation_duration_seconds", testkit.WithLabel(attempt, "error_type", "")},
		{"gen_ai_client_operation_time_to_first_chunk_seconds", attempt},
		{"gen_ai_client_token_usage", testkit.WithLabel(attempt, "gen_ai_token_type", "input")},
	} {
		if n := count(c.name, c.labels); n != 1 {
			t.Errorf("%s%v: %d samples, want 1", c.name, c.labels, n)
		}
	}
	if sum := testkit.Series(t, fams, "gen_ai_client_token_usage", testkit.WithLabel(attempt, "gen_ai_token_type", "output")).GetHistogram().GetSampleSum(); sum != 3 {
		t.Errorf("output tokens %v, want the 3 reported", sum)
	}
	var requests uint64
	for _, m := range fams["gen_ai_server_request_duration_seconds"].GetMetric() {
		requests += m.GetHistogram().GetSampleCount()
	}
	if requests != 2 {
		t.Errorf("%d requests in gen_ai_server_request_duration_seconds, want the 2 inference requests", requests)
	}
	if v := testkit.Series(t, fams, "pistra_bundle_info", map[string]string{"digest": g.Digest, "signed_by": "unsigned"}).GetGauge().GetValue(); v != 1 {
		t.Errorf("pistra_bundle_info %v", v)
	}
	if v := testkit.Series(t, fams, "pistra_ledger_degraded", nil).GetGauge().GetValue(); v != 0 {
		t.Errorf("pistra_ledger_degraded %v on an in-memory ledger", v)
	}
	if _, ok := fams["pistra_raft_has_leader"]; ok {
		t.Error("raft gauges without a raft ledger")
	}
}
