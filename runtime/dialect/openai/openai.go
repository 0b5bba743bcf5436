// Package openai renders gateway answers in the OpenAI wire shapes: the
// {"error":{...}} error object and the models list.
package openai

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// Dialect is the OpenAI dialect.
type Dialect struct{}

var _ dialect.Writer = Dialect{}

// RequestIDHeader is where the OpenAI SDKs read err.requestID from.
func (Dialect) RequestIDHeader() string { return "X-Request-Id" }

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
	// Pistra carries a refusal's data; the SDKs keep unknown members in
	// the error's raw JSON.
	Pistra *dialect.Data `json:"pistra,omitempty"`
}

// WriteError answers with {"error":{"message","type","param","code"}}; the
// pistra code goes in code, which the SDKs surface as err.Code, and a
// refusal's data goes in error.pistra.
func (Dialect) WriteError(w http.ResponseWriter, requestID string, e *dialect.Error) {
	obj := errorObject{Message: e.Message, Type: ErrorType(e.Status), Code: string(e.Code), Pistra: e.Data()}
	if e.Param != "" {
		obj.Param = &e.Param
	}
	b, _ := json.Marshal(errorBody{Error: obj}) // strings and capability sets: cannot fail
	w.Header().Set("x-request-id", requestID)
	e.SetRetryHeaders(w.Header())
	dialect.WriteJSON(w, e.Status, b)
}

// responsesError is a Responses stream's error event, with the error object
// besides its own fields: the SDKs raise an event carrying a top-level
// "error" as an API error, and ignore one without.
type responsesError struct {
	Type    string      `json:"type"`
	Code    string      `json:"code"`
	Message string      `json:"message"`
	Param   *string     `json:"param"`
	Error   errorObject `json:"error"`
}

// AppendStreamError ends a chat or completions stream with a data-only
// {"error":{...}} chunk, and a Responses stream with an error event.
func (Dialect) AppendStreamError(dst []byte, route plan.Route, _ string, e *dialect.Error) []byte {
	obj := errorObject{Message: e.Message, Type: ErrorType(e.Status), Code: string(e.Code)}
	var b []byte
	if route == plan.RouteResponses {
		dst = append(dst, "event: error\n"...)
		b, _ = json.Marshal(responsesError{Type: "error", Code: obj.Code, Message: obj.Message, Error: obj})
	} else {
		b, _ = json.Marshal(errorBody{Error: obj}) // strings only: cannot fail
	}
	dst = append(dst, "data: "...)
	dst = append(dst, b...)
	return append(dst, "\n\n"...)
}

// ErrorType is the error.type OpenAI itself sends with a status: a bad key
// and an unknown model are invalid_request_error too (the code tells them
// apart), rate limits are typed by what ran out ("requests"), and
// server-side failures are server_error. The gateway and the fake provider
// share this table.
func ErrorType(status int) string {
	switch {
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelList struct {
	Object string  `json:"object"`
	Data   []model `json:"data"`
}

// ownedBy is what the gateway reports as a model's owner: the name is
// served by pistra, whichever provider answers it on a given request.
const ownedBy = "pistra"

// WriteModelList answers {"object":"list","data":[...]}; OpenAI's list is
// not paged, so q is unused.
func (Dialect) WriteModelList(w http.ResponseWriter, names []string, _ url.Values) {
	list := modelList{Object: "list", Data: make([]model, len(names))}
	for i, n := range names {
		list.Data[i] = model{ID: n, Object: "model", OwnedBy: ownedBy}
	}
	writeValue(w, list)
}

// WriteModel answers one model object.
func (Dialect) WriteModel(w http.ResponseWriter, name string) {
	writeValue(w, model{ID: name, Object: "model", OwnedBy: ownedBy})
}

func writeValue(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v) // fixed struct of strings and ints: cannot fail
	dialect.WriteJSON(w, http.StatusOK, b)
}
