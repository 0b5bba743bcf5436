// Package dialect holds what both client dialects share: the stable pistra
// error codes, the error value every dialect renders in its own shape, the
// interface each dialect implements, and the targeted read and rewrite of
// the top-level "model" field of a request body.
package dialect

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Code is a stable, machine-readable pistra error code. Clients branch on
// it: OpenAI-dialect errors carry it in error.code, Anthropic-dialect errors
// in error.details.error_code. Messages may change; codes do not. What a
// refusal says as data beyond its code is error.pistra in both (Data).
type Code string

// Every code pistrad answers with, and the status it goes with.
const (
	// CodeMissingAPIKey (401): no Authorization: Bearer or x-api-key header.
	CodeMissingAPIKey Code = "missing_api_key"
	// CodeInvalidAPIKey (401): the key names no profile.
	CodeInvalidAPIKey Code = "invalid_api_key"
	// CodeMissingVersion (400): /v1/messages without anthropic-version.
	CodeMissingVersion Code = "missing_anthropic_version"
	// CodeInvalidVersion (400): anthropic-version is not a YYYY-MM-DD date.
	CodeInvalidVersion Code = "invalid_anthropic_version"
	// CodeMethodNotAllowed (405): the path exists, the method does not.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeUnsupportedMediaType (415): the body is declared as something
	// other than application/json.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeRequestTooLarge (413): the body exceeds the configured bound.
	CodeRequestTooLarge Code = "request_too_large"
	// CodeRequestTimeout (408): the body did not arrive within the
	// configured time.
	CodeRequestTimeout Code = "request_timeout"
	// CodeInvalidJSON (400): the body is not a JSON object.
	CodeInvalidJSON Code = "invalid_json"
	// CodeMissingModel (400): the body has no top-level "model".
	CodeMissingModel Code = "missing_model"
	// CodeInvalidModel (400): "model" is not a string, or appears twice.
	CodeInvalidModel Code = "invalid_model"
	// CodeRouteNotFound (404): no such path.
	CodeRouteNotFound Code = "route_not_found"
	// CodeModelNotFound (404): the catalog serves no model by that name.
	CodeModelNotFound Code = "model_not_found"
	// CodeModelNotAllowed (403): the catalog serves it, the key's profile
	// may not use it.
	CodeModelNotAllowed Code = "model_not_allowed"
	// CodeModelNotOnRoute (404): the model exists for the key, but not on
	// this route (an embedding model on chat completions, say).
	CodeModelNotOnRoute Code = "model_not_on_route"
	// CodeNoCandidate (403): the policy ruled out every way of serving the
	// model for this profile; the message lists why.
	CodeNoCandidate Code = "no_candidate"
	// CodeFidelityLoss (400): every candidate would drop a capability the
	// request uses and the profile rejects lossy serving.
	CodeFidelityLoss Code = "fidelity_loss"
	// CodeUnknownRoute (400): a preflight's route parameter names no
	// inference route.
	CodeUnknownRoute Code = "unknown_route"
	// CodeUnsupportedCandidate (501): the remaining candidates cannot be
	// sent by this gateway (a pool's, in one started without pools).
	CodeUnsupportedCandidate Code = "unsupported_candidate"
	// CodeUntranslatable (400): the request uses something the upstream's
	// dialect cannot carry (a file part, a server tool, no max tokens and
	// no catalog default); every translated candidate would fail the same.
	CodeUntranslatable Code = "untranslatable_request"
	// CodeUpstreamInvalidResponse (502): a translated candidate answered
	// 2xx with a body that could not be read or translated.
	CodeUpstreamInvalidResponse Code = "upstream_invalid_response"
	// CodeUpstreamStreamIncomplete (502, in a stream already answered
	// 200): the upstream's stream broke or ended without its terminal
	// event; the client is sent this as an error event, never a clean end.
	CodeUpstreamStreamIncomplete Code = "upstream_stream_incomplete"
	// CodeUpstreamUnreachable (502): no upstream could be reached.
	CodeUpstreamUnreachable Code = "upstream_unreachable"
	// CodeUpstreamTimeout (504): the upstream did not answer within the
	// provider's timeout.
	CodeUpstreamTimeout Code = "upstream_timeout"
	// CodeUpstreamError (502, or the last upstream's own 5xx): the
	// candidates tried answered with server errors or could not be used;
	// error.pistra.attempts says which, how often and how.
	CodeUpstreamError Code = "upstream_error"
	// CodeUpstreamRateLimited (429): every candidate tried answered 429;
	// retry-after is the shortest wait any of them asked for.
	CodeUpstreamRateLimited Code = "upstream_rate_limited"
	// CodeCircuitOpen (503): the provider's circuit is open after
	// consecutive failures and no other candidate could take the request;
	// retry-after is what is left of its cool-down.
	CodeCircuitOpen Code = "circuit_open"
	// CodeBudgetExceeded (429): a budget the key's profile draws on has no
	// room for the request until its window resets; the message names the
	// budget and the reset, retry-after carries it.
	CodeBudgetExceeded Code = "budget_exceeded"
	// CodeBudgetError (503): the budget ledger could not answer, so the
	// request could not be held against its budget.
	CodeBudgetError Code = "budget_error"
	// CodePoolNoMember (503): the pool (or the profile's subset of it)
	// has no member to send the request to: its DNS name resolves to no
	// address, or its picker said none is ready.
	CodePoolNoMember Code = "pool_no_member"
	// CodePickerUnavailable (503): the pool's endpoint picker is down,
	// failed or did not pick in time, and the pool fails closed.
	CodePickerUnavailable Code = "picker_unavailable"
	// CodePickerShed (429): the pool's endpoint picker shed the request
	// under load.
	CodePickerShed Code = "picker_shed"
	// CodeKeySuspended (403): an operator suspended the key.
	CodeKeySuspended Code = "key_suspended"
	// CodeProviderSuspended (503): an operator suspended the provider the
	// request is routed to first; it is not sent down the failover list.
	CodeProviderSuspended Code = "provider_suspended"
	// CodeServiceNotFound (404): /mcp/{name} or /a2a/{name} names no MCP
	// server or agent of the policy.
	CodeServiceNotFound Code = "service_not_found"
	// CodeServiceNotAllowed (403): the key's profile may not reach the MCP
	// server or agent.
	CodeServiceNotAllowed Code = "service_not_allowed"
	// CodeServiceSuspended (503): an operator suspended the MCP server or
	// agent; it is not called.
	CodeServiceSuspended Code = "service_suspended"
	// CodeInvalidRPC (400): the body is not a JSON-RPC 2.0 message (or
	// batch), or its headers contradict it (Mcp-Method against the body's
	// method).
	CodeInvalidRPC Code = "invalid_rpc"
	// CodeNotReady (503): no policy snapshot is active yet.
	CodeNotReady Code = "not_ready"
	// CodeInternal (500): a bug in pistrad; the request id finds the log.
	CodeInternal Code = "internal_error"
)

// Codes is every code above, in their order: what `pistrac test` accepts
// as a case's refusal besides the policy's own rule codes.
var Codes = []Code{
	CodeMissingAPIKey, CodeInvalidAPIKey, CodeMissingVersion, CodeInvalidVersion,
	CodeMethodNotAllowed, CodeUnsupportedMediaType, CodeRequestTooLarge, CodeRequestTimeout,
	CodeInvalidJSON, CodeMissingModel, CodeInvalidModel, CodeRouteNotFound, CodeModelNotFound,
	CodeModelNotAllowed, CodeModelNotOnRoute, CodeNoCandidate, CodeFidelityLoss, CodeUnknownRoute,
	CodeUnsupportedCandidate, CodeUntranslatable, CodeUpstreamInvalidResponse,
	CodeUpstreamStreamIncomplete, CodeUpstreamUnreachable, CodeUpstreamTimeout, CodeUpstreamError,
	CodeUpstreamRateLimited, CodeCircuitOpen, CodeBudgetExceeded, CodeBudgetError,
	CodePoolNoMember, CodePickerUnavailable, CodePickerShed, CodeKeySuspended, CodeProviderSuspended,
	CodeServiceNotFound, CodeServiceNotAllowed, CodeServiceSuspended, CodeInvalidRPC, CodeNotReady, CodeInternal,
}

// Error is a gateway-originated error, rendered by each dialect in its own
// shape.
type Error struct {
	Status  int
	Code    Code
	Message string
	// Param names the offending request field, when there is one.
	Param string
	// Fidelity details a fidelity_loss refusal; nil for every other error.
	Fidelity *Fidelity
	// RetryAfter, when set, is when the request may succeed again; it is
	// sent as retry-after.
	RetryAfter time.Duration
	// Final is set when retrying the request as sent cannot succeed, at
	// any time: x-should-retry: false tells the SDKs not to.
	Final bool
	// Transient is set when a retry after RetryAfter (at once, when none)
	// may well succeed: x-should-retry: true tells the SDKs to.
	Transient bool
	// Attempts is what was done with each candidate when none served.
	Attempts []Attempt
}

// maxSDKWait is the longest retry-after the official SDKs wait for; past
// it they fall back to their own short backoff and would retry a refusal
// that cannot succeed yet.
const maxSDKWait = time.Minute

// SetRetryHeaders sets retry-after from e.RetryAfter, in whole seconds
// rounded up, and x-should-retry: false when the wait is longer than an
// SDK would honour or no wait helps (Final), so its retries do not hammer a
// refusal that stands; x-should-retry: true when a retry may help
// (Transient).
func (e *Error) SetRetryHeaders(h http.Header) {
	switch {
	case e.Final || e.RetryAfter > maxSDKWait:
		h.Set("X-Should-Retry", "false")
	case e.Transient:
		h.Set("X-Should-Retry", "true")
	}
	if e.RetryAfter <= 0 {
		return
	}
	secs := (e.RetryAfter + time.Second - 1) / time.Second
	h.Set("Retry-After", strconv.FormatInt(int64(secs), 10))
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Errorf builds an Error with a formatted message.
func Errorf(status int, code Code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}
