package dialect

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/pistra/pistra/runtime/plan"
)

// Writer renders gateway answers in one client dialect's wire shapes.
type Writer interface {
	// RequestIDHeader is the response header this dialect's SDKs read the
	// request id from, in canonical form: http.Header canonicalizes any
	// other key with an allocation on every answer.
	RequestIDHeader() string
	// WriteError answers with e in the dialect's error shape.
	WriteError(w http.ResponseWriter, requestID string, e *Error)
	// WriteModelList answers GET /v1/models with names (sorted, unique);
	// q carries the dialect's paging parameters, if it has any.
	WriteModelList(w http.ResponseWriter, names []string, q url.Values)
	// WriteModel answers GET /v1/models/{id} for a listed name.
	WriteModel(w http.ResponseWriter, name string)
	// AppendStreamError appends to dst the event that ends a stream on
	// route with e, in the form the dialect's SDKs raise as an API error
	// rather than take for a clean end.
	AppendStreamError(dst []byte, route plan.Route, requestID string, e *Error) []byte
}

// WriteJSON writes a complete JSON answer with its length.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing left to tell it
}
