package jsonrpc

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/jsonquote"
	"github.com/pistra/pistra/runtime/jsonscan"
)

// Response is what the gateway reads of one JSON-RPC response.
type Response struct {
	// ID is the raw id, pointing into the data read.
	ID []byte
	// Failed is true for an error response.
	Failed bool
	// InputRequired is true for a result whose resultType is
	// "input_required": the server asks for more before it completes (the
	// client re-sends the request, with a new id, once it has it).
	InputRequired bool
}

// ReadResponses calls fn for each response in data: an object or a batch
// of them. Requests and notifications (a server's own, on a stream) and
// anything that is not JSON-RPC are passed over.
func ReadResponses(data []byte, fn func(Response)) {
	s := jsonscan.New(data)
	switch s.Kind() {
	case jsonscan.Object:
		readResponse(data, &s, fn)
	case jsonscan.Array:
		for el := s.Array(); el.Next(); {
			readResponse(data, &s, fn)
		}
	}
}

func readResponse(data []byte, s *jsonscan.Scanner, fn func(Response)) {
	var r Response
	answer := false
	for mem := s.Object(); mem.Next(); {
		switch string(mem.Key()) {
		case "id":
			start := s.Pos()
			s.Skip()
			r.ID = bytes.TrimSpace(data[start:s.Pos()])
		case "error":
			r.Failed, answer = true, true
			s.Skip()
		case "result":
			answer = true
			r.InputRequired = inputRequired(s)
		default:
			s.Skip()
		}
	}
	if answer && r.ID != nil && !s.Bad() {
		fn(r)
	}
}

// inputRequired reads a result, reporting a resultType of input_required.
func inputRequired(s *jsonscan.Scanner) bool {
	found := false
	for mem := s.Object(); mem.Next(); {
		if string(mem.Key()) != "resultType" {
			s.Skip()
			continue
		}
		v, ok := s.RawString()
		found = ok && string(v) == "input_required"
	}
	return found
}

// CodeRefused is the JSON-RPC error code of every refusal the gateway
// makes itself (an implementation-defined server error); the pistra code
// in error.data says which.
const CodeRefused = -32000

// AppendError appends the JSON-RPC error answering the request of raw id
// (nil answers null) with the gateway's refusal e: its message, and in
// error.data its stable pistra code, HTTP status and, when known, the
// seconds after which a retry may succeed.
func AppendError(dst, id []byte, e *dialect.Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	if id == nil {
		id = []byte("null")
	}
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, CodeRefused, 10)
	dst = append(dst, `,"message":`...)
	dst = jsonquote.Append(dst, e.Message)
	dst = append(dst, `,"data":{"pistra_code":`...)
	dst = jsonquote.Append(dst, string(e.Code))
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(e.Status), 10)
	if secs := int64(e.RetryAfter.Seconds() + 0.999); secs > 0 {
		dst = append(dst, `,"retry_after":`...)
		dst = strconv.AppendInt(dst, secs, 10)
	}
	return append(dst, "}}}"...)
}

// WriteError answers with the refusal e of the requests of ids (one
// error each; a batch's answer is an array) with HTTP status status.
func WriteError(w http.ResponseWriter, status int, ids [][]byte, batch bool, e *dialect.Error) {
	var b []byte
	if batch {
		b = append(b, '[')
	}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendError(b, id, e)
	}
	if len(ids) == 0 {
		b = AppendError(b, nil, e)
	}
	if batch {
		b = append(b, ']')
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(e.RetryAfter.Seconds()+0.999), 10))
	}
	dialect.WriteJSON(w, status, b)
}
