// Package plan holds the decision graph: the one IR that pistrac produces,
// codegen renders as Go, bundle.json serializes, and pistrad serves.
//
// Everything here is plain data. Names are resolved to indexes at build time so
// the runtime never looks a string up twice; identical plans and candidate
// lists are stored once and shared by reference (index).
package plan

// Graph is the whole compiled policy. It is immutable once built.
type Graph struct {
	// SourceHash is a SHA-256 over the policy inputs, so a reviewer and the
	// runtime can tell which policy a bundle came from. No timestamps.
	SourceHash string `json:"source_hash"`
	// Digest is "sha256:<hex>" over the graph's content (bundle.Digest
	// says exactly what is hashed), written by the compiler: pistrad
	// refuses a bundle whose content no longer hashes to it, so what
	// serves is what was built from the reviewed policy.
	Digest string `json:"digest,omitempty"`
	// Signatures is empty or one compact JWS (EdDSA) over Digest, added by
	// pistrac build -signing-key and checked by pistrad
	// -bundle-public-key. Neither field is part of the digest.
	Signatures []string `json:"signatures,omitempty"`

	// OnFidelityLoss is the deployment default.
	OnFidelityLoss LossAction `json:"on_fidelity_loss"`

	Providers []Provider `json:"providers"`
	Pools     []Pool     `json:"pools,omitempty"`
	// MCPServers and Agents are the services agent traffic reaches, each
	// sorted by name.
	MCPServers []Service `json:"mcp_servers,omitempty"`
	Agents     []Service `json:"agents,omitempty"`
	Profiles   []Profile `json:"profiles"`
	Keys       []Key     `json:"keys"`
	Budgets    []Budget  `json:"budgets,omitempty"`
	// Rules are the deployment-wide access rules, evaluated before any
	// profile's own rules.
	Rules []Rule `json:"rules,omitempty"`

	// Candidates and Skips are deduplicated lists referenced by Plans.
	CandidateLists [][]Candidate `json:"candidate_lists"`
	SkipLists      [][]Skip      `json:"skip_lists"`
	// Plans are deduplicated; table entries reference them.
	Plans []Plan `json:"plans"`
	// Tables map (route, requested name) to a plan. Profiles whose
	// envelopes come out the same share one table.
	Tables []Table `json:"tables"`
	// Names is every public name the catalog serves (models and aliases),
	// sorted, so the runtime can tell "unknown" from "not for this key".
	Names []string `json:"names"`

	// CEL holds every checked expression the runtime evaluates.
	CEL []Expr `json:"cel,omitempty"`
}

// Route is the inbound wire shape a request arrived on.
type Route string

const (
	RouteChatCompletions Route = "chat_completions"
	RouteCompletions     Route = "completions"
	RouteEmbeddings      Route = "embeddings"
	RouteResponses       Route = "responses"
	RouteMessages        Route = "messages"
	// RouteRealtime and RouteLive are WebSocket sessions (OpenAI Realtime,
	// Gemini Live): routed at the upgrade, then relayed frame by frame.
	RouteRealtime Route = "realtime"
	RouteLive     Route = "live"
)

// Routes lists every route in canonical order. A RouteSet bit stands for
// each, so new routes are appended.
var Routes = []Route{RouteChatCompletions, RouteCompletions, RouteEmbeddings, RouteResponses, RouteMessages,
	RouteRealtime, RouteLive}

// Session reports whether r is a WebSocket session rather than a request.
func (r Route) Session() bool { return r == RouteRealtime || r == RouteLive }

// LivePath is Gemini Live's upstream path below the API root, for API
// version v (v1beta, v1alpha).
func LivePath(v string) string {
	return "/ws/google.ai.generativelanguage." + v + ".GenerativeService.BidiGenerateContent"
}

// UpstreamPath is the path the route takes below a base URL that ends in
// /v1 ("/chat/completions"); "" for an unknown route.
func (r Route) UpstreamPath() string {
	switch r {
	case RouteChatCompletions:
		return "/chat/completions"
	case RouteCompletions:
		return "/completions"
	case RouteEmbeddings:
		return "/embeddings"
	case RouteResponses:
		return "/responses"
	case RouteMessages:
		return "/messages"
	case RouteRealtime:
		return "/realtime"
	case RouteLive:
		return LivePath("v1beta") // below the API root, not /v1: Gemini's URLs carry their version
	}
	return ""
}

// Dialect is the API family a client or channel speaks.
type Dialect string

const (
	DialectOpenAI    Dialect = "openai"
	DialectAnthropic Dialect = "anthropic"
	// DialectGemini is Google's Gemini API, reached here for Live
	// sessions only.
	DialectGemini Dialect = "gemini"
)

// Dialect returns the inbound dialect of a route.
func (r Route) Dialect() Dialect {
	switch r {
	case RouteMessages:
		return DialectAnthropic
	case RouteLive:
		return DialectGemini
	}
	return DialectOpenAI
}

// Operation is the route's OpenTelemetry GenAI operation name, as spans
// and the GenAI metrics label it: every conversational route is chat.
func (r Route) Operation() string {
	switch r {
	case RouteCompletions:
		return "text_completion"
	case RouteEmbeddings:
		return "embeddings"
	}
	return "chat"
}

// DefaultRoute reports whether a channel of r's dialect that lists no
// routes serves r: every route but Realtime, which few OpenAI-dialect
// endpoints speak, so a channel names it to carry it.
func (r Route) DefaultRoute() bool { return r != RouteRealtime }

// Tier orders how a provider is reached.
type Tier string

const (
	TierNative         Tier = "native"
	TierProviderCompat Tier = "provider_compat"
	// TierTranslation is not a channel tier an operator declares: it is a
	// candidate riding a native channel of the other dialect through a
	// translator, and it is always tried last.
	TierTranslation Tier = "translation"
)

// Translation names a wired dialect pair, inbound first.
type Translation string

const (
	TranslateNone            Translation = ""
	TranslateOpenAIAnthropic Translation = "openai_anthropic"
	TranslateAnthropicOpenAI Translation = "anthropic_openai"
	// TranslateResponsesAnthropic serves OpenAI Responses clients from
	// Anthropic Messages; TranslateAnthropicResponses serves Anthropic
	// clients from a channel that offers a model only on Responses.
	TranslateResponsesAnthropic Translation = "responses_anthropic"
	TranslateAnthropicResponses Translation = "anthropic_responses"
)

// Translations lists every wired pair.
var Translations = []Translation{TranslateOpenAIAnthropic, TranslateAnthropicOpenAI, TranslateResponsesAnthropic, TranslateAnthropicResponses}

// Inbound is the client route a translation pair serves: chat completions
// or responses for OpenAI clients, messages for Anthropic ones.
// TranslateNone serves none.
func (t Translation) Inbound() Route {
	switch t {
	case TranslateOpenAIAnthropic:
		return RouteChatCompletions
	case TranslateResponsesAnthropic:
		return RouteResponses
	case TranslateAnthropicOpenAI, TranslateAnthropicResponses:
		return RouteMessages
	}
	return ""
}

// Upstream is the route a candidate with this translation is sent on,
// for a request that arrived on inbound.
func (t Translation) Upstream(inbound Route) Route {
	switch t {
	case TranslateOpenAIAnthropic, TranslateResponsesAnthropic:
		return RouteMessages
	case TranslateAnthropicOpenAI:
		return RouteChatCompletions
	case TranslateAnthropicResponses:
		return RouteResponses
	}
	return inbound
}

// Provider is one upstream deployment.
type Provider struct {
	Name string `json:"name"`
	// BaseURL is empty for a pool-backed provider (Pool is set instead).
	BaseURL string `json:"base_url,omitempty"`
	Pool    int    `json:"pool"` // index into Graph.Pools, -1 when none
	// CredentialEnv names the environment variable holding the secret; the
	// secret itself never enters the graph. Empty means no credential.
	CredentialEnv string `json:"credential_env,omitempty"`
	// Auth says how the credential is presented upstream, as the policy
	// wrote it; empty leaves it to each channel (see ChannelAuth).
	Auth AuthScheme `json:"auth,omitempty"`
	// Headers are static headers sent on every upstream request
	// (anthropic-version, ...). Never secrets. A header of one dialect
	// (DialectHeaders) reaches only that dialect's channels.
	Headers []Header `json:"headers,omitempty"`
	// Query holds static query parameters (Azure's api-version).
	Query []Header `json:"query,omitempty"`
	// TLS is how the provider's TLS connections are made, when it needs
	// more than the system roots: its own CA bundle, a client certificate.
	TLS      *TLS      `json:"tls,omitempty"`
	Channels []Channel `json:"channels"`
	Models   []Model   `json:"models"`
	// Aliases are this provider's own resolution of public names.
	Aliases   []Alias  `json:"aliases,omitempty"`
	Retry     Retry    `json:"retry"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	Failover  Failover `json:"failover"`
	// Circuit is the provider's circuit breaker; nil when the policy
	// names none, and then the provider is always tried.
	Circuit *Circuit `json:"circuit,omitempty"`
	// StreamUsage asks OpenAI-dialect chat streams for usage on the
	// client's behalf (stream_options.include_usage).
	StreamUsage bool `json:"stream_usage"`
	// UsageAPI is the provider's own usage API, where the policy names it:
	// the ids the usage ledger's rows carry, and what `pistrac reconcile`
	// holds the metering against.
	UsageAPI *UsageAPI `json:"usage_api,omitempty"`
}

// UsageAPI is how a provider's own usage API groups its traffic and how
// it is read and judged. Names and ids only: the admin key itself never
// enters the graph.
type UsageAPI struct {
	// KeyID and WorkspaceID are the provider-side ids (never secrets) of
	// the API key the provider's credential is and of its workspace; the
	// usage ledger's rows carry them, so they compare per key.
	KeyID       string `json:"key_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	// API is which usage API the provider serves: UsageAPIOpenAI or
	// UsageAPIAnthropic. Empty when the policy names keys only.
	API string `json:"api,omitempty"`
	// AdminKeyEnv names the environment variable holding the admin key
	// the usage API takes.
	AdminKeyEnv string `json:"admin_key_env,omitempty"`
	// SettleDelayMS is how long after a UTC day ends its figures are taken
	// as final: a younger day is skipped, not judged.
	SettleDelayMS int64 `json:"settle_delay_ms,omitempty"`
	// Tolerance is the relative difference (0.01 = 1%) up to which a
	// token class still matches.
	Tolerance float64 `json:"tolerance,omitempty"`
}

// The usage APIs a provider can name.
const (
	// UsageAPIOpenAI is OpenAI's organization usage API (completions and
	// embeddings).
	UsageAPIOpenAI = "openai"
	// UsageAPIAnthropic is Anthropic's messages usage report.
	UsageAPIAnthropic = "anthropic"
)

// TLS holds a provider's upstream TLS options. Files are named, never
// inlined: pistrad reads them when it loads the snapshot.
type TLS struct {
	// CAFile is a PEM bundle of the CAs the upstream's certificate must
	// chain to, instead of the system roots.
	CAFile string `json:"ca_file,omitempty"`
	// CertFile and KeyFile are the client certificate (PEM) and its key,
	// presented when the upstream asks for one; both or neither.
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	// ServerName is the name the upstream's certificate is checked
	// against (and sent as SNI) when it is not the URL's host.
	ServerName string `json:"server_name,omitempty"`
}

// Header is a name/value pair.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Model is an upstream model a provider serves.
type Model struct {
	Name string `json:"name"`
	// MaxTokens is the default max_tokens used when translating into a
	// dialect that requires one and the request stated none.
	MaxTokens int64 `json:"max_tokens,omitempty"`
}

// Alias maps a public name to this provider's upstream model.
type Alias struct {
	Name   string `json:"name"`
	Target string `json:"target"`
}

// Channel is one way a provider is reachable.
type Channel struct {
	Name    string  `json:"name"`
	Dialect Dialect `json:"dialect"`
	Tier    Tier    `json:"tier"`
	// BaseURL overrides the provider's when the channel lives elsewhere
	// (Anthropic's OpenAI-compatible endpoint, say).
	BaseURL string `json:"base_url,omitempty"`
	// CredentialEnv and Auth override the provider's for this channel;
	// empty inherits (see ChannelAuth for the default scheme).
	CredentialEnv string     `json:"credential_env,omitempty"`
	Auth          AuthScheme `json:"auth,omitempty"`
	// Headers and Query add to the provider's, replacing those of the same
	// name.
	Headers []Header `json:"headers,omitempty"`
	Query   []Header `json:"query,omitempty"`
	// ModelGate lists the upstream models this channel accepts, exact or
	// trailing-* prefix; empty means every model of the provider.
	ModelGate []string `json:"model_gate,omitempty"`
	Routes    []Route  `json:"routes"`
	// Preserves is the capability set the channel keeps. Native channels
	// keep everything (AllCaps); compat channels keep what they declare.
	Preserves  CapSet `json:"preserves"`
	Origin     string `json:"origin"`
	VerifiedAt string `json:"verified_at,omitempty"`
	VerifiedBy string `json:"verified_by,omitempty"`
	// Overrode lists the claims a compat channel's (the four fields above)
	// won over, the next in line first: the catalog's own claim and the
	// overlays' that were not the newest.
	Overrode []Claim `json:"overrode,omitempty"`
}

// Claim is one layer's capability claim on a provider_compat channel: the
// catalog's own (a preset's or a policy file's) or an overlay's.
type Claim struct {
	Preserves  CapSet `json:"preserves"`
	Origin     string `json:"origin"`
	VerifiedAt string `json:"verified_at"`
	VerifiedBy string `json:"verified_by"`
}

// Retry is a provider's same-provider retry policy.
type Retry struct {
	Max       int   `json:"max"`
	BackoffMS int64 `json:"backoff_ms"`
	// On lists the failure classes that are retried.
	On []FailureClass `json:"on,omitempty"`
}

// Failover is where a provider's traffic goes once its retries run out.
type Failover struct {
	To []int          `json:"to,omitempty"` // provider indexes, in order
	On []FailureClass `json:"on,omitempty"`
}

// Circuit opens after Failures consecutive failed attempts (connect, 5xx,
// timeout): the provider is then passed over untried for CoolDownMS, after
// which HalfOpenProbes requests per cool-down are let through to test it.
type Circuit struct {
	Failures       int   `json:"failures"`
	CoolDownMS     int64 `json:"cool_down_ms"`
	HalfOpenProbes int   `json:"half_open_probes"`
}

// MaxHalfOpenProbes bounds half_open_probes: the runtime packs the probe
// count beside the state in one word.
const MaxHalfOpenProbes = 63

// Pool is a set of self-hosted servers reached under one name.
type Pool struct {
	Name string `json:"name"`
	// DNS is host:port whose A/AAAA records are the member set.
	DNS     string   `json:"dns"`
	Subsets []Subset `json:"subsets,omitempty"`
	// Picker is the ext_proc endpoint picker address; empty means members
	// are used in turn.
	Picker string `json:"picker,omitempty"`
	Scheme string `json:"scheme"`
	// PickerCAFile is the PEM bundle the picker's certificate must chain
	// to ("" for the system roots); PickerPlaintext reaches it without TLS.
	PickerCAFile    string `json:"picker_ca_file,omitempty"`
	PickerPlaintext bool   `json:"picker_plaintext,omitempty"`
	// PickerTimeoutMS bounds a pick and PickerFailure says what a picker
	// that fails does to the request; both are set when Picker is.
	PickerTimeoutMS int64         `json:"picker_timeout_ms,omitempty"`
	PickerFailure   PickerFailure `json:"picker_failure,omitempty"`
}

// Subset is a named slice of a pool, with its own DNS name.
type Subset struct {
	Name string `json:"name"`
	DNS  string `json:"dns"`
}

// Profile is what a key may reach.
type Profile struct {
	Name string `json:"name"`
	// AllowedModels is empty when the profile has no model limit.
	AllowedModels  []string   `json:"allowed_models,omitempty"`
	RequireCaps    CapSet     `json:"require_caps"`
	PoolSubset     string     `json:"pool_subset,omitempty"`
	OnFidelityLoss LossAction `json:"on_fidelity_loss"`
	Rules          []Rule     `json:"rules,omitempty"`
	Table          int        `json:"table"`             // index into Graph.Tables
	Budgets        []int      `json:"budgets,omitempty"` // indexes into Graph.Budgets
	// MCPServers and Agents index Graph.MCPServers and Graph.Agents: what
	// the profile's keys may reach. AgentBudgets index Graph.Budgets: the
	// budgets its MCP and A2A calls draw on.
	MCPServers   []int `json:"mcp_servers,omitempty"`
	Agents       []int `json:"agents,omitempty"`
	AgentBudgets []int `json:"agent_budgets,omitempty"`
}

// Key is a client credential, stored as a hash only.
type Key struct {
	Name    string `json:"name"`
	Hash    string `json:"hash"` // "sha256:<hex>"
	Profile int    `json:"profile"`
}

// Budget is a cost allowance per window, in tokens (cost units).
type Budget struct {
	Name   string `json:"name"`
	Limit  uint64 `json:"limit"`
	Window Window `json:"window"`
	// Per says what a bucket is kept for.
	Per      BucketScope `json:"per"`
	CostType CostType    `json:"cost_type"`
	// CostExpr indexes Graph.CEL when CostType is CEL, else -1.
	CostExpr       int    `json:"cost_expr"`
	CostPerCall    uint64 `json:"cost_per_call"`
	CostPerSession uint64 `json:"cost_per_session"`
}

// Expr is a CEL expression checked at build time.
type Expr struct {
	Kind   string `json:"kind"` // "cost" or "rule"
	Source string `json:"source"`
	// Checked is the base64 of the serialized checked AST
	// (google.api.expr.v1alpha1.CheckedExpr); the runtime builds programs
	// from it without parsing or checking.
	Checked string `json:"checked"`
}

// Table is one routing envelope: entries sorted by route, then name. A
// name the profile may not use on a route has no entry.
type Table struct {
	Entries []Entry `json:"entries"`
	// RouteSets holds, for each name of Graph.Names (same index), the
	// routes this table has a plan for it on, so a refusal on another route
	// can name where it answers without a search (see RoutesOf). Derived
	// from Entries; one small number per name keeps gen/ small.
	RouteSets []RouteSet `json:"route_sets,omitempty"`
}

// RouteSet is a set of routes: bit i stands for Routes[i].
type RouteSet uint16 // not uint8: JSON writes a []uint8 as base64

// Routes lists the routes in s, in Routes order.
func (s RouteSet) Routes() []Route {
	var out []Route
	for i, r := range Routes {
		if s&(1<<i) != 0 {
			out = append(out, r)
		}
	}
	return out
}

// Entry maps one (route, requested name) to a plan.
type Entry struct {
	Route Route  `json:"route"`
	Model string `json:"model"`
	Plan  int    `json:"plan"`
}

// Plan is the decision for one (profile, route, requested name): who may
// serve it and in which order, and who was ruled out and why.
type Plan struct {
	// Candidates indexes Graph.CandidateLists; Skips indexes Graph.SkipLists.
	Candidates int `json:"candidates"`
	Skips      int `json:"skips"`
	// NativeOnly is true when every candidate is a native channel of the
	// inbound dialect: the capability reader is not needed at all.
	NativeOnly bool `json:"native_only"`
	// Listed is true when the name is advertised in GET /v1/models for
	// the profile (at least one candidate can serve it).
	Listed bool `json:"listed"`
	// Denied is every static access rule that denies one of the plan's
	// candidates; WithDenied then indexes Graph.CandidateLists: the
	// candidates with those the rules deny kept in place, marked, so that
	// a suspended rule's candidates are restored in attempt order.
	Denied     RuleSet `json:"denied,omitempty"`
	WithDenied int     `json:"with_denied,omitempty"`
}

// Candidate is one way to serve a plan, in attempt order.
type Candidate struct {
	Provider int    `json:"provider"`
	Channel  int    `json:"channel"` // index into Provider.Channels
	Tier     Tier   `json:"tier"`
	Model    string `json:"model"` // upstream model after this provider's alias resolution
	// Translate is the dialect pair when the candidate rides a channel of
	// the other dialect. The upstream route follows from it (see
	// Translation.Upstream), which is why a candidate does not carry one:
	// the same candidate then serves every route of its dialect, and plans
	// are shared across routes.
	Translate Translation `json:"translate,omitempty"`
	Preserves CapSet      `json:"preserves"`
	Origin    string      `json:"origin"`
	// Primary is true for candidates of the primary provider; the others
	// are failover candidates reached after its retries run out.
	Primary bool `json:"primary"`
	// PoolSubset restricts a pool-backed candidate to one subset.
	PoolSubset string `json:"pool_subset,omitempty"`
	// Denied is, in a plan's WithDenied list, the static access rules that
	// deny this candidate: it serves while every one of them is
	// suspended. Zero in the candidate lists plans serve from.
	Denied RuleSet `json:"denied,omitempty"`
}

// Skip is a candidate ruled out at build time.
type Skip struct {
	Provider int    `json:"provider"`
	Channel  int    `json:"channel"` // -1 when the whole provider was skipped
	Model    string `json:"model,omitempty"`
	// Reason is model_denied, fidelity_loss, pool_subset_missing,
	// not_served, route_unserved, or an access rule's code.
	Reason string `json:"reason"`
	// Missing lists the required capabilities the channel lacks, for
	// fidelity_loss.
	Missing CapSet `json:"missing,omitempty"`
	// Translate is the dialect pair when the skipped candidate would have
	// ridden the channel through a translator.
	Translate Translation `json:"translate,omitempty"`
	// Rules are, for a skip an access rule made, the rules that deny the
	// candidate (the first of them gave Reason): every static one, and
	// of those read per request, the one that denied it.
	Rules RuleSet `json:"rules,omitempty"`
}

// ChannelAuth is how channel ci of p presents its credential: the
// channel's own scheme, else the provider's, else its dialect's default.
func (p *Provider) ChannelAuth(ci int) AuthScheme {
	ch := &p.Channels[ci]
	switch {
	case ch.Auth != "":
		return ch.Auth
	case p.Auth != "":
		return p.Auth
	}
	return DefaultAuth(ch.Dialect)
}

// ChannelCredentialEnv is the variable channel ci of p reads its secret
// from: its own, else the provider's; "" when it sends none.
func (p *Provider) ChannelCredentialEnv(ci int) string {
	if env := p.Channels[ci].CredentialEnv; env != "" {
		return env
	}
	return p.CredentialEnv
}
