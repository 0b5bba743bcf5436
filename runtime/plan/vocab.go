package plan

import (
	"slices"
	"strings"
)

// The policy's closed vocabularies beyond routes, dialects and tiers. Each
// list is the one place a value is spelled: the compiler checks policies
// against it, the runtime verifies graphs against it, and tests hold the
// IR's JSON Schema to it. Lists are in documentation order.

// FailureClass is why an attempt failed, in the vocabulary of retry.on and
// failover.on.
type FailureClass string

const (
	FailureConnect FailureClass = "connect"
	Failure5xx     FailureClass = "5xx"
	Failure429     FailureClass = "429"
	FailureTimeout FailureClass = "timeout"
)

// FailureClasses lists every failure class.
var FailureClasses = []FailureClass{FailureConnect, Failure5xx, Failure429, FailureTimeout}

// Valid reports whether c is a known failure class.
func (c FailureClass) Valid() bool { return slices.Contains(FailureClasses, c) }

// AuthScheme is how a provider's credential is presented upstream.
type AuthScheme string

const (
	AuthBearer  AuthScheme = "bearer"    // Authorization: Bearer <secret>
	AuthXAPIKey AuthScheme = "x-api-key" // Anthropic's x-api-key header
	AuthAPIKey  AuthScheme = "api-key"   // Azure's api-key header
	// AuthGoogAPIKey is the Gemini API's x-goog-api-key header.
	AuthGoogAPIKey AuthScheme = "x-goog-api-key"
)

// AuthSchemes lists every auth scheme.
var AuthSchemes = []AuthScheme{AuthBearer, AuthXAPIKey, AuthAPIKey, AuthGoogAPIKey}

// Valid reports whether a is a known auth scheme.
func (a AuthScheme) Valid() bool { return slices.Contains(AuthSchemes, a) }

// DefaultAuth is the scheme a channel of dialect d presents a credential
// with when neither it nor its provider names one: each dialect's own
// (an OpenAI-compatible endpoint wants Bearer whoever runs it).
func DefaultAuth(d Dialect) AuthScheme {
	switch d {
	case DialectAnthropic:
		return AuthXAPIKey
	case DialectGemini:
		return AuthGoogAPIKey
	}
	return AuthBearer
}

// dialectHeaders are the static headers that mean something to one
// dialect's API only, lower-cased: they select an Anthropic API version or
// opt-in, or an OpenAI account. Sent to the other dialect's endpoint they
// are at best ignored and at worst refused. anthropic-workspace-id is not
// one: Anthropic's OpenAI-compatible endpoint reads it too.
var dialectHeaders = map[string]Dialect{
	"anthropic-version":   DialectAnthropic,
	"anthropic-beta":      DialectAnthropic,
	"openai-organization": DialectOpenAI,
	"openai-project":      DialectOpenAI,
}

// HeaderDialect is the dialect header name (any case) is meant for, or ""
// when it is meant for any upstream.
func HeaderDialect(name string) Dialect { return dialectHeaders[strings.ToLower(name)] }

// CostType is what a budget counts per request: one of the token counts
// the meter reads, or a CEL expression over them. CostTotalToken is what a
// budget counts when its policy names no type.
type CostType string

const (
	CostInputToken              CostType = "InputToken"
	CostOutputToken             CostType = "OutputToken"
	CostTotalToken              CostType = "TotalToken"
	CostCachedInputToken        CostType = "CachedInputToken"
	CostCacheCreationInputToken CostType = "CacheCreationInputToken"
	CostReasoningToken          CostType = "ReasoningToken"
	CostCEL                     CostType = "CEL"
)

// CostTypes lists every cost type.
var CostTypes = []CostType{CostInputToken, CostOutputToken, CostTotalToken, CostCachedInputToken,
	CostCacheCreationInputToken, CostReasoningToken, CostCEL}

// Valid reports whether t is a known cost type.
func (t CostType) Valid() bool { return slices.Contains(CostTypes, t) }

// LossAction is what on_fidelity_loss does when every candidate would drop
// a capability the request uses.
type LossAction string

const (
	LossReject LossAction = "reject"
	LossAllow  LossAction = "allow"
)

// LossActions lists every on_fidelity_loss action.
var LossActions = []LossAction{LossReject, LossAllow}

// Valid reports whether a is a known on_fidelity_loss action.
func (a LossAction) Valid() bool { return slices.Contains(LossActions, a) }

// PickerFailure is what a pool's request does when its endpoint picker is
// down, slow or errs.
type PickerFailure string

const (
	// PickerFailClosed refuses the pooled candidate (picker_unavailable),
	// so the request fails over as its policy says.
	PickerFailClosed PickerFailure = "closed"
	// PickerFailOpen spreads the request over the members in turn.
	PickerFailOpen PickerFailure = "open"
)

// PickerFailures lists every picker_failure mode, the default first.
var PickerFailures = []PickerFailure{PickerFailClosed, PickerFailOpen}

// Valid reports whether f is a known picker_failure mode.
func (f PickerFailure) Valid() bool { return slices.Contains(PickerFailures, f) }

// DefaultPickerTimeoutMS bounds a pick when the pool states no
// picker_timeout.
const DefaultPickerTimeoutMS = 2000

// Window is the period a budget's allowance covers.
type Window string

const (
	WindowMinute Window = "minute"
	WindowHour   Window = "hour"
	WindowDay    Window = "day"
	WindowMonth  Window = "month"
)

// Windows lists every budget window.
var Windows = []Window{WindowMinute, WindowHour, WindowDay, WindowMonth}

// Valid reports whether w is a known budget window.
func (w Window) Valid() bool { return slices.Contains(Windows, w) }

// BucketScope is what one budget bucket is kept for (Budget.Per).
type BucketScope string

const (
	PerKey     BucketScope = "key"
	PerProfile BucketScope = "profile"
)

// BucketScopes lists every bucket scope.
var BucketScopes = []BucketScope{PerKey, PerProfile}

// Valid reports whether s is a known bucket scope.
func (s BucketScope) Valid() bool { return slices.Contains(BucketScopes, s) }

// Names spells a list of vocabulary values as strings, for messages and
// flag help.
func Names[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
