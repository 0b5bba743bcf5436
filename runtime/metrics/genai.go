package metrics

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The OpenTelemetry GenAI histograms, under the names the OTel Prometheus
// translation gives them (dots to underscores, the unit as a suffix), so
// boards written for other GenAI-instrumented gateways read them. The
// bucket boundaries are the conventions' advice, given explicitly: neither
// the Prometheus nor the OTel default suits seconds or token counts.
var (
	// durationBuckets: 10 ms doubling to 81.92 s.
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	ttftBuckets     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	tpotBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	// tokenBuckets: 1 quadrupling to 4^13.
	tokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// Label names of the GenAI series.
const (
	labelOperation     = "gen_ai_operation_name"
	labelProvider      = "gen_ai_provider_name"
	labelRequestModel  = "gen_ai_request_model"
	labelResponseModel = "gen_ai_response_model"
	labelTokenType     = "gen_ai_token_type"
	labelErrorType     = "error_type"
)

// OtherModel is the request model label of a name the catalog does not
// serve: the client's name is not a label, or any string would be one.
const OtherModel = "_OTHER"

// ModelLabel is model as a label: itself when it is one of names (the
// catalog's public names, sorted), else OtherModel.
func ModelLabel(names []string, model string) string {
	if i := sort.SearchStrings(names, model); i < len(names) && names[i] == model {
		return names[i]
	}
	return OtherModel
}

// genai holds the GenAI histograms and caches their series by label
// values: every label comes from the catalog (or a short fixed list), so
// the caches stay as small as it is, and a request finds its series
// without hashing labels or allocating.
type genai struct {
	serverDuration, serverTTFT, serverTPOT *prometheus.HistogramVec
	clientDuration, clientTTFC, tokenUsage *prometheus.HistogramVec
	servedBy, attemptBy                    sync.Map
}

func newGenAI() *genai {
	server := []string{labelOperation, labelProvider, labelRequestModel, labelResponseModel}
	client := []string{labelOperation, labelProvider, labelRequestModel}
	return &genai{
		serverDuration: histogram("gen_ai_server_request_duration_seconds",
			"Time from a client request's arrival to the last byte of its answer, by operation, serving provider, requested model (a catalog name, else _OTHER), upstream model that served and error type (empty on success).",
			durationBuckets, append(server, labelErrorType)...),
		serverTTFT: histogram("gen_ai_server_time_to_first_token_seconds",
			"Time from a streamed request's arrival to its first event sent to the client, for successful answers.",
			ttftBuckets, server...),
		serverTPOT: histogram("gen_ai_server_time_per_output_token_seconds",
			"Time per output token after the first of a successful streamed answer: (duration - time to first token) / (output tokens - 1).",
			tpotBuckets, server...),
		clientDuration: histogram("gen_ai_client_operation_duration_seconds",
			"Time of one upstream attempt, from sending it to the end of its answer (the relay's end when it served), by operation, provider, upstream model and error type (empty on success).",
			durationBuckets, append(client, labelErrorType)...),
		clientTTFC: histogram("gen_ai_client_operation_time_to_first_chunk_seconds",
			"Time from sending a streamed upstream attempt to its first event.",
			durationBuckets, client...),
		tokenUsage: histogram("gen_ai_client_token_usage",
			"Tokens one answer used, by operation, provider, upstream model and token type (input or output).",
			tokenBuckets, append(client, labelTokenType)...),
	}
}

func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

func (g *genai) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.serverDuration, g.serverTTFT, g.serverTPOT, g.clientDuration, g.clientTTFC, g.tokenUsage}
}

// Served is one client request as the server histograms see it.
type Served struct {
	// Operation is the GenAI operation (plan.Route.Operation); Provider
	// the provider that served (NoProvider when none did);
	// RequestModel a ModelLabel; ResponseModel the upstream model that
	// served, "" when none did.
	Operation, Provider, RequestModel, ResponseModel string
	// ErrorType is "" on success.
	ErrorType string
	Duration  time.Duration
	// FirstToken is the time to the first event of a successful stream,
	// 0 when it did not stream; OutputTokens what the answer reported.
	FirstToken   time.Duration
	OutputTokens uint64
}

type servedKey struct{ op, provider, reqModel, respModel, errType string }

type servedSeries struct{ duration, ttft, tpot prometheus.Observer }

// Served records one client request.
func (m *Metrics) Served(s *Served) {
	g := m.genai
	k := servedKey{s.Operation, s.Provider, s.RequestModel, s.ResponseModel, s.ErrorType}
	v, ok := g.servedBy.Load(k)
	if !ok {
		ss := &servedSeries{duration: g.serverDuration.WithLabelValues(k.op, k.provider, k.reqModel, k.respModel, k.errType)}
		if k.errType == "" {
			ss.ttft = g.serverTTFT.WithLabelValues(k.op, k.provider, k.reqModel, k.respModel)
			ss.tpot = g.serverTPOT.WithLabelValues(k.op, k.provider, k.reqModel, k.respModel)
		}
		v, _ = g.servedBy.LoadOrStore(k, ss)
	}
	ss := v.(*servedSeries)
	ss.duration.Observe(s.Duration.Seconds())
	if ss.ttft == nil || s.FirstToken <= 0 {
		return
	}
	ss.ttft.Observe(s.FirstToken.Seconds())
	if s.OutputTokens > 1 && s.Duration > s.FirstToken {
		ss.tpot.Observe((s.Duration - s.FirstToken).Seconds() / float64(s.OutputTokens-1))
	}
}

type attemptKey struct{ op, provider, model, errType string }

type attemptSeries struct{ duration, ttfc prometheus.Observer }

// Attempt records one upstream attempt on provider for model (the
// catalog's upstream model): how long it took, and, when it streamed,
// how long its first event took (firstChunk, else 0). errType is "" on
// success.
func (m *Metrics) Attempt(op, provider, model, errType string, d, firstChunk time.Duration) {
	g := m.genai
	k := attemptKey{op, provider, model, errType}
	v, ok := g.attemptBy.Load(k)
	if !ok {
		as := &attemptSeries{duration: g.clientDuration.WithLabelValues(op, provider, model, errType),
			ttfc: g.clientTTFC.WithLabelValues(op, provider, model)}
		v, _ = g.attemptBy.LoadOrStore(k, as)
	}
	as := v.(*attemptSeries)
	as.duration.Observe(d.Seconds())
	if firstChunk > 0 {
		as.ttfc.Observe(firstChunk.Seconds())
	}
}
