package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/dialect/anthropic"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

const (
	antSecret = "ant-secret"
	oaiSecret = "oai-secret"
)

// translationProviders: ant and ant26 speak only Anthropic (ant26 pins
// anthropic-version 2026-10-21), oai only OpenAI and fails over to ant;
// oai-strict is an OpenAI server that refuses unknown fields
// (stream_usage off).
func translationProviders() []plan.Provider {
	chans := func(d plan.Dialect, r plan.Route) []plan.Channel {
		return []plan.Channel{{Name: "native", Dialect: d, Tier: plan.TierNative, Routes: []plan.Route{r}, Origin: "native"}}
	}
	retry := plan.Retry{Max: 1, BackoffMS: 1, On: []plan.FailureClass{plan.Failure5xx, plan.Failure429}}
	return []plan.Provider{
		{Name: "ant", BaseURL: "http://ant.test/v1", Pool: -1, CredentialEnv: "ANT", Auth: "x-api-key", Retry: retry,
			Channels: chans(plan.DialectAnthropic, plan.RouteMessages), Models: []plan.Model{{Name: "claude-x", MaxTokens: 333}}},
		{Name: "ant26", BaseURL: "http://ant26.test/v1", Pool: -1, Headers: []plan.Header{{Name: "anthropic-version", Value: "2026-10-21"}},
			Channels: chans(plan.DialectAnthropic, plan.RouteMessages), Models: []plan.Model{{Name: "claude-x", MaxTokens: 100}}},
		{Name: "oai", BaseURL: "http://oai.test/v1", Pool: -1, CredentialEnv: "OAI", Auth: "bearer", Retry: retry,
			Channels: chans(plan.DialectOpenAI, plan.RouteChatCompletions), Models: []plan.Model{{Name: "gpt-x"}},
			Failover: plan.Failover{To: []int{0}, On: []plan.FailureClass{plan.Failure5xx}}, StreamUsage: true},
		{Name: "oai-strict", BaseURL: "http://oai-strict.test/v1", Pool: -1,
			Channels: chans(plan.DialectOpenAI, plan.RouteChatCompletions), Models: []plan.Model{{Name: "gpt-x"}}},
		{Name: "oai-resp", BaseURL: "http://oai-resp.test/v1", Pool: -1, CredentialEnv: "OAI", Auth: "bearer", Retry: retry,
			Channels: chans(plan.DialectOpenAI, plan.RouteResponses), Models: []plan.Model{{Name: "gpt-x"}}},
	}
}

var (
	toAnt       = plan.Candidate{Provider: 0, Tier: plan.TierTranslation, Model: "claude-x", Translate: plan.TranslateOpenAIAnthropic, Origin: "translation:openai_anthropic", Primary: true}
	toAnt26     = plan.Candidate{Provider: 1, Tier: plan.TierTranslation, Model: "claude-x", Translate: plan.TranslateOpenAIAnthropic, Origin: "translation:openai_anthropic", Primary: true}
	toAntResp   = plan.Candidate{Provider: 0, Tier: plan.TierTranslation, Model: "claude-x", Translate: plan.TranslateResponsesAnthropic, Origin: "translation:responses_anthropic", Primary: true}
	toOAIResp   = plan.Candidate{Provider: 4, Tier: plan.TierTranslation, Model: "gpt-x", Translate: plan.TranslateAnthropicResponses, Origin: "translation:anthropic_responses", Primary: true}
	toOAI       = plan.Candidate{Provider: 2, Tier: plan.TierTranslation, Model: "gpt-x", Translate: plan.TranslateAnthropicOpenAI, Origin: "translation:anthropic_openai", Primary: true}
	toOAIStrict = plan.Candidate{Provider: 3, Tier: plan.TierTranslation, Model: "gpt-x", Translate: plan.TranslateAnthropicOpenAI, Origin: "translation:anthropic_openai", Primary: true}
	oaiSame     = plan.Candidate{Provider: 2, Tier: plan.TierNative, Model: "gpt-x", Origin: "native", Primary: true}
)

// flushCounter records the response and counts flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++; f.ResponseRecorder.Flush() }

// call is one client request served by the proxy against an in-memory upstream.
type call struct {
	route  plan.Route
	body   string
	header map[string]string
	cands  []plan.Candidate
	// providers the candidates index; translationProviders when nil.
	providers []plan.Provider
	// gate admits candidates; nil admits every one. metrics, when set,
	// receives the counts.
	gate    admission.Gate
	metrics *metrics.Metrics
	// profile and key are what the gate is told the request is on.
	profile, key int
	// transport, when set, replaces the in-memory upstream.
	transport http.RoundTripper
	// skips are the plan's build-time skips.
	skips []plan.Skip
	// maxAnswer is the proxy's MaxAnswerBytes.
	maxAnswer int
	// graph is what the gate is told the request is served under, and
	// circuits hears how its attempts went; nil for none.
	graph    *plan.Graph
	circuits Verdicts
	// hangUpOn, when set, ends the client's context as soon as the client
	// has been written these bytes: an SDK closing the connection on
	// reading an error event.
	hangUpOn string
	// gone, when set, is a client whose connection closed before the
	// answer: every body write fails and its context is cancelled.
	gone bool
	// pools are the pools the providers index, and picker the proxy's
	// Pools (nil for none).
	pools  []plan.Pool
	picker Pools
}

// hangUp is a client that leaves once it has read what it waits for.
type hangUp struct {
	*flushCounter
	on     string
	cancel context.CancelFunc
}

func (h *hangUp) Write(b []byte) (int, error) {
	n, err := h.flushCounter.Write(b)
	if strings.Contains(h.Body.String(), h.on) {
		h.cancel()
	}
	return n, err
}

// goneClient is a client whose connection is closed.
type goneClient struct {
	*flushCounter
	cancel context.CancelFunc
}

var errClientGone = errors.New("write: connection reset by peer")

func (g *goneClient) Write([]byte) (int, error) {
	g.cancel()
	return 0, errClientGone
}

func (c call) serve(t *testing.T, up *testkit.Upstream) (record.Record, *flushCounter) {
	t.Helper()
	provs := c.providers
	if provs == nil {
		provs = translationProviders()
	}
	env := map[string]string{"ANT": antSecret, "OAI": oaiSecret}
	ups, err := upstream.Resolve(&plan.Graph{Providers: provs, Pools: c.pools}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	raw := GetBuffer()
	*raw = append(*raw, c.body...)
	h, err := dialect.ReadHead(*raw)
	if err != nil {
		t.Fatal(err)
	}
	var body Body
	body.Reset(raw, h.Model)
	body.SetStream(h.Stream)
	defer body.Release()
	client := httptest.NewRequest("POST", "/v1/x", nil)
	for k, v := range c.header {
		client.Header.Set(k, v)
	}
	var d dialect.Writer = openai.Dialect{}
	if c.route == plan.RouteMessages {
		d = anthropic.Dialect{}
	}
	order := make([]int, len(c.cands))
	for i := range order {
		order[i] = i
	}
	w := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	var cw http.ResponseWriter = w
	if c.hangUpOn != "" || c.gone {
		ctx, cancel := context.WithCancel(client.Context())
		defer cancel()
		client = client.WithContext(ctx)
		cw = &hangUp{flushCounter: w, on: c.hangUpOn, cancel: cancel}
		if c.gone {
			cw = &goneClient{flushCounter: w, cancel: cancel}
		}
	}
	m := c.metrics
	if m == nil {
		m = metrics.New()
	}
	var tr http.RoundTripper = up
	if c.transport != nil {
		tr = c.transport
	}
	p := &Proxy{Transport: tr, Metrics: m, MaxRetryWait: time.Millisecond, Gate: c.gate, Circuits: c.circuits,
		MaxAnswerBytes: c.maxAnswer, Pools: c.picker}
	var rec record.Record
	p.Serve(&Exchange{W: cw, Client: client, RequestID: "req_t", Route: c.route, Dialect: d,
		Body: &body, Upstreams: ups, Candidates: c.cands, Order: order, Skips: c.skips,
		Admission: admission.Request{Graph: c.graph, Profile: c.profile, Key: c.key, Route: c.route, Body: body.Bytes()},
		Record:    &rec})
	return rec, w
}

const (
	antMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x-20250101","content":[{"type":"text","text":"Hi"},` +
		`{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,` +
		`"usage":{"input_tokens":10,"cache_read_input_tokens":5,"cache_creation_input_tokens":2,"output_tokens":7}}`
	oaiCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x-2025","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`
	oaiClientBody = `{"model":"public","messages":[{"role":"user","content":"hi"}]}`
	antClientBody = `{"model":"public","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
)

// antEvents is an Anthropic stream answering "Hello" in two deltas.
var antEvents = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	"event: ping\ndata: {\"type\":\"ping\"}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

// oaiChunks is an OpenAI stream answering "Hello" with a usage chunk.
var oaiChunks = []string{
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n",
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":null}` + "\n\n",
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}],"usage":null}` + "\n\n",
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n",
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}` + "\n\n",
	"data: [DONE]\n\n",
}
