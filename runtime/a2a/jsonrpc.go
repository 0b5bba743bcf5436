package a2a

import (
	"net/http"
	"strconv"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/jsonquote"
	"github.com/pistra/pistra/runtime/jsonscan"
)

// JSON-RPC error codes the gateway answers with: the protocol's own for a
// body that is not a request, and one in the range JSON-RPC leaves to
// servers for everything the gateway refuses or could not do (the pistra
// code in error.data says which).
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcGatewayError   = -32099
)

// writeError answers a call the gateway refuses or could not serve in
// JSON-RPC form, under the request's id (null when it had none): the
// status e says, e's message, and its stable code in error.data.code,
// which the SDKs hand back with the error.
func writeError(w http.ResponseWriter, id []byte, e *dialect.Error) {
	writeRPCError(w, id, rpcGatewayError, e)
}

// writeRPCError is writeError under JSON-RPC error code code.
func writeRPCError(w http.ResponseWriter, id []byte, code int, e *dialect.Error) {
	b := appendError(make([]byte, 0, 160+len(e.Message)), id, code, e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	e.SetRetryHeaders(h)
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// appendError appends e as a JSON-RPC error response under code, and a
// newline.
func appendError(b, id []byte, code int, e *dialect.Error) []byte {
	if len(id) == 0 {
		id = []byte("null")
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = jsonquote.Append(b, e.Message)
	b = append(b, `,"data":{"code":`...)
	b = jsonquote.Append(b, string(e.Code))
	return append(b, "}}}\n"...)
}

// isError reports whether a JSON-RPC answer (or an event of a stream) is
// an error: an object with a non-null top-level "error". It is how a
// JSON-RPC agent refuses a call, under a 200.
func isError(doc []byte) bool {
	s := jsonscan.New(doc)
	for m := s.Object(); m.Next(); {
		if string(m.Key()) == "error" {
			return s.Kind() != jsonscan.Null
		}
		s.Skip()
	}
	return false
}
