// Package anthropic renders gateway answers in the Anthropic wire shapes:
// the {"type":"error",...} error object and the paged models list.
package anthropic

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// Dialect is the Anthropic dialect.
type Dialect struct{}

var _ dialect.Writer = Dialect{}

// RequestIDHeader is where the Anthropic SDKs read err.RequestID from.
func (Dialect) RequestIDHeader() string { return "Request-Id" }

type errorBody struct {
	Type      string      `json:"type"`
	Error     errorObject `json:"error"`
	RequestID string      `json:"request_id"`
}

type errorObject struct {
	Type    string       `json:"type"`
	Message string       `json:"message"`
	Details errorDetails `json:"details"`
	// Pistra carries a refusal's data, under the same name as in the
	// OpenAI dialect.
	Pistra *dialect.Data `json:"pistra,omitempty"`
}

// errorDetails carries the pistra code, and beside it, for clients written
// before error.pistra, the fields of a fidelity refusal (deprecated: read
// error.pistra).
type errorDetails struct {
	ErrorCode string `json:"error_code"`
	*dialect.Fidelity
}

// WriteError answers with {"type":"error","error":{"type","message",
// "details":{"error_code",...}},"request_id"}.
func (Dialect) WriteError(w http.ResponseWriter, requestID string, e *dialect.Error) {
	w.Header().Set("request-id", requestID)
	e.SetRetryHeaders(w.Header())
	dialect.WriteJSON(w, e.Status, errorJSON(requestID, e))
}

// AppendStreamError ends a stream with an error event: the same body as an
// error answer, under event: error, which the SDKs raise as an API error.
func (Dialect) AppendStreamError(dst []byte, _ plan.Route, requestID string, e *dialect.Error) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = append(dst, errorJSON(requestID, e)...)
	return append(dst, "\n\n"...)
}

func errorJSON(requestID string, e *dialect.Error) []byte {
	b, _ := json.Marshal(errorBody{ // strings and capability sets: cannot fail
		Type: "error",
		Error: errorObject{
			Type:    ErrorType(e.Status),
			Message: e.Message,
			Details: errorDetails{ErrorCode: string(e.Code), Fidelity: e.Fidelity},
			Pistra:  e.Data(),
		},
		RequestID: requestID,
	})
	return b
}

// ErrorType is the error.type Anthropic documents for an HTTP status; the
// fake upstream and the translators use it too, so there is one table.
func ErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusConflict:
		return "conflict_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case StatusOverloaded:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// StatusOverloaded is Anthropic's own status for an overloaded API.
const StatusOverloaded = 529

type model struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

type modelPage struct {
	Data    []model `json:"data"`
	HasMore bool    `json:"has_more"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
}

// createdAt is reported for every name: a gateway name has no release
// date of its own, and the SDKs require a timestamp.
const createdAt = "1970-01-01T00:00:00Z"

// Paging limits, as Anthropic documents them for this endpoint.
const (
	defaultLimit = 20
	maxLimit     = 1000
)

// WriteModelList answers one page of names, honouring limit, after_id and
// before_id the way the Anthropic API pages its list.
func (Dialect) WriteModelList(w http.ResponseWriter, names []string, q url.Values) {
	page := pageOf(names, q)
	out := modelPage{Data: make([]model, len(page.names)), HasMore: page.more}
	for i, n := range page.names {
		out.Data[i] = newModel(n)
	}
	if len(page.names) > 0 {
		out.FirstID, out.LastID = &page.names[0], &page.names[len(page.names)-1]
	}
	writeValue(w, out)
}

// WriteModel answers one model object.
func (Dialect) WriteModel(w http.ResponseWriter, name string) { writeValue(w, newModel(name)) }

func newModel(name string) model {
	return model{Type: "model", ID: name, DisplayName: name, CreatedAt: createdAt}
}

type page struct {
	names []string
	more  bool
}

// pageOf cuts names (sorted) at the cursor: after_id pages forward,
// before_id backward; an unknown cursor starts from the edge it names.
func pageOf(names []string, q url.Values) page {
	limit := defaultLimit
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		limit = min(n, maxLimit)
	}
	if before := q.Get("before_id"); before != "" {
		end := sort.SearchStrings(names, before)
		start := max(0, end-limit)
		return page{names: names[start:end], more: start > 0}
	}
	start := 0
	if after := q.Get("after_id"); after != "" {
		start = sort.SearchStrings(names, after)
		if start < len(names) && names[start] == after {
			start++
		}
	}
	end := min(len(names), start+limit)
	return page{names: names[start:end], more: end < len(names)}
}

func writeValue(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v) // fixed struct of strings and bools: cannot fail
	dialect.WriteJSON(w, http.StatusOK, b)
}
