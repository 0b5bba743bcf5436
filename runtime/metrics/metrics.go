// Package metrics defines pistrad's Prometheus series. Names and labels are
// part of the product contract; change them deliberately.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pistra/pistra/runtime/meter"
)

// NoProvider is the provider label of a request no upstream answered
// (refused by the gateway, or every attempt failed to connect).
const NoProvider = "none"

// Metrics is one registry of pistrad's series. Each server gets its own, so
// several can run in one process (tests) without colliding.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// requestBy caches requests' and duration's series by requestKey:
	// routes, providers and statuses are few, and a request would
	// otherwise hash and check its labels twice.
	requestBy sync.Map
	retries   *prometheus.CounterVec
	noRetry   *prometheus.CounterVec
	failovers *prometheus.CounterVec
	skipped   *prometheus.CounterVec
	streams   *prometheus.CounterVec
	tokens    *prometheus.CounterVec
	// tokenByModel caches tokens' counters by [operation, provider,
	// model]; all come from the catalog or the routes, so it stays as small
	// as the catalog.
	tokenByModel sync.Map
	refusals     *prometheus.CounterVec
	used         *prometheus.GaugeVec
	buckets      *prometheus.GaugeVec
	downgrade    *prometheus.CounterVec
	panics       prometheus.Counter
	reloads      *prometheus.CounterVec
	poolPicks    *prometheus.CounterVec
	// pickBy caches poolPicks' counters by [provider, outcome]: a few per
	// pooled provider, found once instead of hashed per request.
	pickBy      sync.Map
	poolMembers *prometheus.GaugeVec
	poolAge     *prometheus.GaugeVec
	genai       *genai
	health      *health
	calls       *prometheus.CounterVec
	meterOff    *prometheus.CounterVec
	sessions    *prometheus.CounterVec
}

// New registers every series on a fresh registry, with the Go runtime and
// process collectors beside them.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_requests_total",
			Help: "Client requests answered, by inbound route, serving provider and HTTP status.",
		}, []string{"route", "provider", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pistra_request_duration_seconds",
			Help:    "Time from request arrival to the last byte relayed, by inbound route, serving provider and HTTP status.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"route", "provider", "code"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_retry_total",
			Help: "Attempts re-sent to the same provider after a wait, by failure class.",
		}, []string{"provider", "reason"}),
		noRetry: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_retry_skipped_total",
			Help: "Retries not made on a provider, by reason: retry_after_over_cap when it asked for a longer wait than the cap and another provider could take the request.",
		}, []string{"provider", "reason"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_failover_total",
			Help: "Requests moved from one provider to another, by failure class.",
		}, []string{"from", "to", "reason"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_failover_skipped_total",
			Help: "Candidates passed over untried because they could not be admitted (a budget without room, ...), by provider and reason.",
		}, []string{"provider", "reason"}),
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_stream_failures_total",
			Help: "Streams that failed after their status was sent, by provider and reason: incomplete (broke, or ended without the terminal event; the client got an error event) or upstream_error (the upstream sent an error event).",
		}, []string{"provider", "reason"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gen_ai_client_token_usage_total",
			Help: "Tokens the providers reported using, by provider, upstream model (from the catalog) and token type (input, output, and the cached_input, cache_creation_input and reasoning subsets).",
		}, []string{"gen_ai_provider_name", "gen_ai_request_model", "gen_ai_token_type"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_auth_failures_total",
			Help: "Requests the gateway refused before any provider was tried, by reason (its pistra code: invalid_api_key, budget_exceeded, budget_error, ...).",
		}, []string{"reason"}),
		used: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pistra_budget_used_ratio",
			Help: "The fraction of its limit drawn (spent and held) by the budget's fullest bucket of the current window, as of the last flush.",
		}, []string{"budget"}),
		buckets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pistra_budget_buckets",
			Help: "Open buckets of the budget in the current window, by state: under their limit, or over (no room left).",
		}, []string{"budget", "state"}),
		downgrade: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_channel_downgrade_total",
			Help: "Capabilities a request uses that a candidate channel would drop, by what happened: the candidate was skipped for a lossless one, allowed lossy by policy, or the request was rejected.",
		}, []string{"provider", "channel", "cap", "action"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pistra_panics_total",
			Help: "Requests whose handler panicked and was recovered (each one is a bug).",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_reloads_total",
			Help: "Policy bundle reloads, by result (applied or refused).",
		}, []string{"result"}),
		poolPicks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_pool_picks_total",
			Help: "How pooled requests were sent, by provider and outcome: picked (the picker's pick, checked), refused (the picker named an address outside the member set; sent round robin), round_robin (no picker), fallback (the picker failed and the pool fails open), picker_error (the picker failed and the pool fails closed), shed (the picker shed the request), no_member (no member to send it to).",
		}, []string{"provider", "outcome"}),
		poolMembers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pistra_pool_members",
			Help: "Members of a pooled provider's member set (subset empty) or of one of its subsets, as its DNS name last resolved.",
		}, []string{"provider", "subset"}),
		poolAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pistra_pool_members_age_seconds",
			Help: "Time since a pool member set last resolved, as of its latest attempt: rising while DNS fails and the last good set is kept.",
		}, []string{"provider", "subset"}),
		genai:  newGenAI(),
		health: newHealth(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pistra_agent_calls_total",
			Help: "JSON-RPC messages sent to MCP servers and A2A agents (or refused on the way), by kind (mcp_server, agent), service, method class (tool, resource, prompt, message, task, other, notification) and outcome: charged, free (answered, not charged), upstream_error, input_required, unanswered, forwarded (a notification or response), or the refusal's code.",
		}, []string{"kind", "service", "class", "outcome"}),
	}
	m.reg.MustRegister(m.genai.collectors()...)
	m.reg.MustRegister(m.health.collectors()...)
	m.meterOff = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pistra_session_meter_off_total",
		Help: "WebSocket sessions whose usage decoder turned itself off on a frame it could not follow (the session went on, metered by its session cost only), by route and reason.",
	}, []string{"route", "reason"})
	m.sessions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pistra_session_endings_total",
		Help: "WebSocket sessions ended, by route, serving provider and how: client_closed, upstream_closed, upstream_lost, budget_exceeded, suspended, idle.",
	}, []string{"route", "provider", "ending"})
	m.reg.MustRegister(m.meterOff, m.sessions)
	m.reg.MustRegister(m.requests, m.duration, m.retries, m.noRetry, m.failovers, m.skipped, m.streams, m.tokens, m.refusals, m.used, m.buckets, m.downgrade, m.panics, m.reloads,
		m.poolPicks, m.poolMembers, m.poolAge, m.calls,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry exposes the registry, for tests that read values back.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Request records one answered request.
func (m *Metrics) Request(route, provider string, status int, d time.Duration) {
	k := requestKey{route, provider, status}
	v, ok := m.requestBy.Load(k)
	if !ok {
		code := StatusLabel(status)
		v, _ = m.requestBy.LoadOrStore(k, &requestSeries{m.requests.WithLabelValues(route, provider, code),
			m.duration.WithLabelValues(route, provider, code)})
	}
	rs := v.(*requestSeries)
	rs.count.Inc()
	rs.duration.Observe(d.Seconds())
}

type requestKey struct {
	route, provider string
	status          int
}

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// Retry records an attempt re-sent to provider after a failure of class reason.
func (m *Metrics) Retry(provider, reason string) { m.retries.WithLabelValues(provider, reason).Inc() }

// RetryAfterOverCap is why a retry was skipped: the upstream asked for a
// longer wait than the cap.
const RetryAfterOverCap = "retry_after_over_cap"

// RetrySkipped records a retry not made on provider, for reason.
func (m *Metrics) RetrySkipped(provider, reason string) {
	m.noRetry.WithLabelValues(provider, reason).Inc()
}

// Failover records a request moved from one provider to another.
func (m *Metrics) Failover(from, to, reason string) {
	m.failovers.WithLabelValues(from, to, reason).Inc()
}

// FailoverSkipped records a candidate of provider passed over untried
// because it was not admitted, for reason.
func (m *Metrics) FailoverSkipped(provider, reason string) {
	m.skipped.WithLabelValues(provider, reason).Inc()
}

// SessionMeterOff records a session whose usage decoder turned itself off.
func (m *Metrics) SessionMeterOff(route, reason string) {
	m.meterOff.WithLabelValues(route, reason).Inc()
}

// SessionEnded records how a WebSocket session ended.
func (m *Metrics) SessionEnded(route, provider, ending string) {
	m.sessions.WithLabelValues(route, provider, ending).Inc()
}

// Reasons a stream failed after its status was sent.
const (
	StreamIncomplete    = "incomplete"
	StreamUpstreamError = "upstream_error"
)

// StreamFailure records a stream from provider that failed for reason.
func (m *Metrics) StreamFailure(provider, reason string) {
	m.streams.WithLabelValues(provider, reason).Inc()
}

// tokenTypes are the token classes of gen_ai_client_token_usage_total, in
// the order tokenCounts lists them.
var tokenTypes = [...]string{"input", "output", "cached_input", "cache_creation_input", "reasoning"}

// tokenCounts holds one (operation, provider, model)'s counters, one per
// token type, and its token usage histograms (input and output), found
// once and kept, so a request's usage costs no label hashing.
type tokenCounts struct {
	counters      [len(tokenTypes)]prometheus.Counter
	input, output prometheus.Observer
}

// Tokens records the usage provider reported serving model for an answer
// of operation op.
func (m *Metrics) Tokens(op, provider, model string, u *meter.Usage) {
	k := [3]string{op, provider, model}
	v, ok := m.tokenByModel.Load(k)
	if !ok {
		var c tokenCounts
		for i, typ := range tokenTypes {
			c.counters[i] = m.tokens.WithLabelValues(provider, model, typ)
		}
		c.input = m.genai.tokenUsage.WithLabelValues(op, provider, model, "input")
		c.output = m.genai.tokenUsage.WithLabelValues(op, provider, model, "output")
		v, _ = m.tokenByModel.LoadOrStore(k, &c)
	}
	c := v.(*tokenCounts)
	for i, n := range [...]uint64{u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CacheCreationInputTokens, u.ReasoningTokens} {
		if n > 0 {
			c.counters[i].Add(float64(n))
		}
	}
	c.input.Observe(float64(u.InputTokens))
	c.output.Observe(float64(u.OutputTokens))
}

// Call counts one JSON-RPC message to an MCP server or agent. Every label
// is bounded: kinds and classes are fixed lists, services the policy's,
// outcomes fixed or a refusal's code.
func (m *Metrics) Call(kind, service, class, outcome string) {
	m.calls.WithLabelValues(kind, service, class, outcome).Inc()
}

// Refused records a request refused before any provider was tried.
func (m *Metrics) Refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// ResetBudgets forgets the budget gauges before a flush republishes them,
// so a budget stops being reported once it has no bucket in its current
// window (one a reload removed, once its last bucket has drained).
func (m *Metrics) ResetBudgets() {
	m.used.Reset()
	m.buckets.Reset()
}

// Budget publishes one budget's fullest bucket and its bucket counts.
func (m *Metrics) Budget(name string, worst float64, under, over int) {
	m.used.WithLabelValues(name).Set(worst)
	m.buckets.WithLabelValues(name, "under").Set(float64(under))
	m.buckets.WithLabelValues(name, "over").Set(float64(over))
}

// Downgrade actions: what became of a capability a candidate would drop.
const (
	// DowngradeSkipped: the candidate was passed over for a lossless one.
	DowngradeSkipped = "skipped"
	// DowngradeAllowed: the request was forwarded on it, lossy, by policy.
	DowngradeAllowed = "allowed"
	// DowngradeRejected: no candidate was lossless and the request was
	// refused.
	DowngradeRejected = "rejected"
)

// Downgrade records that the candidate on provider's channel would drop
// capability c of a request, and which action was taken.
func (m *Metrics) Downgrade(provider, channel, c, action string) {
	m.downgrade.WithLabelValues(provider, channel, c, action).Inc()
}

// PoolPick records how one pooled request of provider was sent.
func (m *Metrics) PoolPick(provider, outcome string) {
	k := [2]string{provider, outcome}
	c, ok := m.pickBy.Load(k)
	if !ok {
		c, _ = m.pickBy.LoadOrStore(k, m.poolPicks.WithLabelValues(provider, outcome))
	}
	c.(prometheus.Counter).Inc()
}

// PoolMembers publishes a member set of provider (its subset's, or the
// pool's own when subset is empty): how many members, and how long ago it
// last resolved.
func (m *Metrics) PoolMembers(provider, subset string, members int, age time.Duration) {
	m.poolMembers.WithLabelValues(provider, subset).Set(float64(members))
	m.poolAge.WithLabelValues(provider, subset).Set(age.Seconds())
}

// PoolGone stops reporting a member set a reload removed.
func (m *Metrics) PoolGone(provider, subset string) {
	m.poolMembers.DeleteLabelValues(provider, subset)
	m.poolAge.DeleteLabelValues(provider, subset)
}

// Panic records a recovered handler panic.
func (m *Metrics) Panic() { m.panics.Inc() }

// Reload records a reload attempt; applied is false when it was refused.
func (m *Metrics) Reload(applied bool) {
	result := "refused"
	if applied {
		result = "applied"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// statusLabels holds the label of every valid status, so the hot path does
// not format one per request.
var statusLabels = func() (out [600]string) {
	for i := 100; i < len(out); i++ {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// StatusLabel is status as a label, without formatting a common one.
func StatusLabel(status int) string {
	if status >= 100 && status < len(statusLabels) {
		return statusLabels[status]
	}
	return strconv.Itoa(status)
}
