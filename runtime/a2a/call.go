package a2a

import (
	"errors"
	"strings"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// Binding is how a call reached the gateway.
type Binding uint8

const (
	// JSONRPC: a JSON-RPC 2.0 request POSTed to the agent's endpoint.
	JSONRPC Binding = iota
	// HTTPJSON: the HTTP+JSON (REST) binding, the operation in the route.
	HTTPJSON
	// Card: a GET of the agent card at a well-known path.
	Card
)

// Call is one A2A request as the gateway reads it, before anything is
// sent: which operation it is and, for JSON-RPC, the request's id, which
// a refusal answers under.
type Call struct {
	// Method is the operation in the v1.0 vocabulary whatever spelling
	// the client used ("SendMessage" for message/send as for
	// SendMessage, and for POST /message:send), so an access rule on a
	// method holds in every generation and binding; an unknown one is
	// the name as sent (JSON-RPC) or "<METHOD> <path>" (HTTP+JSON).
	Method  string
	Class   Class
	Binding Binding
	// Stream: the answer is an event stream.
	Stream bool
	// ID is the JSON-RPC id as written (a number, a string with its
	// quotes, or null), nil for the other bindings.
	ID []byte
}

// Errors ReadJSONRPC answers for a body that is not one A2A request.
var (
	ErrNotJSONRPC = errors.New("the body is not a JSON-RPC 2.0 request object")
	ErrBatch      = errors.New("a JSON-RPC batch is not an A2A request: send one request per POST")
	ErrNoMethod   = errors.New(`the JSON-RPC request has no string "method"`)
)

// ReadJSONRPC reads the operation of a JSON-RPC request body by a
// targeted scan: its method and id, nothing else. A2A has no batches
// (agents answer one request per POST), so an array is refused rather
// than guessed at: what one POST costs would otherwise depend on how an
// agent the gateway cannot see treats it. A notification (no id) is read
// like a request: an agent that acts on it does the same work.
func ReadJSONRPC(body []byte) (Call, error) {
	s := jsonscan.New(body)
	switch s.Kind() {
	case jsonscan.Object:
	case jsonscan.Array:
		return Call{}, ErrBatch
	default:
		return Call{}, ErrNotJSONRPC
	}
	var name, id []byte
	names, named, version := 0, false, false
	for m := s.Object(); m.Next(); {
		switch key(m.Key()) {
		case "method":
			// Twice (in any case or escaping) is refused below: which one
			// the agent reads is its decoder's choice (encoding/json's is
			// the last).
			names++
			name, named = s.RawString()
		case "id":
			from := s.Pos()
			s.Skip()
			id = body[from:s.Pos()]
		case "jsonrpc":
			v, _ := s.RawString()
			version = string(v) == "2.0"
		default:
			s.Skip()
		}
	}
	if s.End(); s.Bad() || !version {
		return Call{}, ErrNotJSONRPC
	}
	if !named || names > 1 {
		return Call{}, ErrNoMethod
	}
	plain, ok := jsonscan.Unquote(nil, name)
	if !ok {
		return Call{}, ErrNoMethod
	}
	o := method(string(plain))
	return Call{Method: o.name, Class: o.class, Binding: JSONRPC, Stream: o.stream, ID: id}, nil
}

// ReadHTTPJSON reads the operation of an HTTP+JSON binding request from
// its method and its path below the agent's root.
func ReadHTTPJSON(httpMethod, path string) Call {
	o := route(httpMethod, path)
	return Call{Method: o.name, Class: o.class, Binding: HTTPJSON, Stream: o.stream}
}

// key is a member's name as a decoder of the agent's may match it: the
// members the gateway reads are known in any case and any escaping
// (encoding/json matches a struct's field names case-insensitively), so
// "Method" cannot carry past the gateway a method it did not read.
func key(raw []byte) string {
	k, ok := jsonscan.Unquote(nil, raw)
	if !ok {
		return ""
	}
	for _, name := range [...]string{"method", "id", "jsonrpc"} {
		if strings.EqualFold(string(k), name) {
			return name
		}
	}
	return ""
}
