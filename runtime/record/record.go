// Package record holds what one request was: who asked for what, which
// candidate served it after how many attempts, what it used and how it
// ended. It is filled as the request goes (the server's checks, the
// routing decision, the attempt loop, the relay) and read in three
// places that must agree: the response headers naming what served, the
// request log line and the metrics.
package record

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
)

// Record is one request. Its zero value, with Start set, is a request
// nothing is known of yet.
type Record struct {
	Start time.Time
	ID    string
	Route string
	// Model is the name the client asked for, as it asked.
	Model string
	// Profile names the key's profile, "" until the key is known;
	// OnBehalfOf the key an admin preflight asked for.
	Profile, OnBehalfOf string

	// Status is the status the client was sent; StatusClientClosed when
	// it left first. UpstreamStatus is the served upstream answer's, which
	// can differ (a translated 2xx the gateway could not translate is the
	// client's 502).
	Status, UpstreamStatus int
	// Served is the candidate whose answer was relayed, nil when the
	// gateway answered itself. Tried is the candidate of the last attempt,
	// served or not.
	Served, Tried *plan.Candidate
	// Provider names Served's provider; empty when none did. Endpoint is
	// the pool member (host:port) whose answer was relayed, when Served
	// is pooled.
	Provider, Endpoint string
	// Attempts counts upstream requests sent.
	Attempts int
	// Failover is true once the request moved to another provider.
	Failover bool
	// Origin is the capability claim routing acted on: the tried
	// candidate's, or every candidate's when fidelity refused.
	Origin string
	// Lost is what a lossy-allowed request was served without.
	Lost plan.CapSet
	// UpstreamRequestID is the id the upstream gave its answer.
	UpstreamRequestID string

	// Usage is what the answer reported using, read from UsageFrom.
	Usage     meter.Usage
	UsageFrom meter.Source

	// Code is set when the gateway answered with its own error.
	Code dialect.Code
	// Err is the last failure, if any. Never holds a secret.
	Err error
	// Call is what an MCP or A2A request called; nil for any other.
	Call *Call
	// Cut is true when the upstream body broke after the status was sent:
	// the client connection must be aborted so the client sees an error
	// rather than a clean end.
	Cut bool
}

// Call is the part of an MCP or A2A request's record an LLM request has
// none of.
type Call struct {
	// Service is the MCP server or agent called; Key the caller's key by
	// name.
	Service, Key string
	// Method is the first request's method (the only one but in a batch);
	// Calls counts the charged calls admitted.
	Method string
	Calls  int
	// Budgets names the budgets the calls drew on; Charge is what they
	// were charged in all, summed over those budgets.
	Budgets string
	Charge  uint64
}

// StatusClientClosed is recorded when the client went away before an
// answer was sent.
const StatusClientClosed = 499

// Response headers naming what served the request.
const (
	HeaderRequestID     = "Pistra-Request-Id"
	HeaderProvider      = "Pistra-Provider"
	HeaderChannelOrigin = "Pistra-Channel-Origin"
	// HeaderModel is the upstream model that served, after the provider's
	// own alias resolution: with Pistra-Provider, the pair a cost
	// expression prices.
	HeaderModel = "Pistra-Model"
	// HeaderAttempt numbers the upstream request whose answer this is,
	// counting retries and failovers: 1 when the first one served.
	HeaderAttempt = "Pistra-Attempt"
	// HeaderFailover is "true" when the answer came from another provider
	// than the request was first sent to.
	HeaderFailover = "Pistra-Failover"
	// HeaderEndpoint is the pool member (host:port) that served, on a
	// pooled provider's answers only.
	HeaderEndpoint = "Pistra-Endpoint"
)

// Header values shared by every response; never modified.
var (
	attemptValues = func() (v [17][]string) {
		for i := range v {
			v[i] = []string{strconv.Itoa(i)}
		}
		return v
	}()
	trueValue  = []string{"true"}
	falseValue = []string{"false"}
)

// SetServedHeaders names, on an upstream's answer, what served it: the
// provider (provider is Provider as a header value, shared), the upstream
// model (model likewise), which attempt and whether a failover happened,
// and the claim routing acted on.
func (r *Record) SetServedHeaders(h http.Header, provider, model []string) {
	h[HeaderProvider] = provider
	h[HeaderModel] = model
	if r.Attempts < len(attemptValues) {
		h[HeaderAttempt] = attemptValues[r.Attempts]
	} else {
		h[HeaderAttempt] = []string{strconv.Itoa(r.Attempts)}
	}
	h[HeaderFailover] = falseValue
	if r.Failover {
		h[HeaderFailover] = trueValue
	}
	if r.Endpoint != "" {
		h[HeaderEndpoint] = []string{r.Endpoint}
	}
	r.SetOriginHeader(h)
}

// Refused records the gateway's own error answer.
func (r *Record) Refused(e *dialect.Error) {
	r.Status, r.Code = e.Status, e.Code
}

// ProviderLabel is the provider as the metrics and the log name it.
func (r *Record) ProviderLabel() string {
	if r.Provider == "" {
		return metrics.NoProvider
	}
	return r.Provider
}

// SetOriginHeader names the claim routing acted on, when there is one.
func (r *Record) SetOriginHeader(h http.Header) {
	if r.Origin != "" {
		h[HeaderChannelOrigin] = []string{r.Origin}
	}
}

// Level is the log level of the request line: a warning when the client
// got a broken answer, not when it left first (its connection is cut only
// in case it is still half reading).
func (r *Record) Level() slog.Level {
	if r.Err != nil && r.Cut && r.Status != StatusClientClosed {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
