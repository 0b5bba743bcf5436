package a2a

import (
	"errors"

	"github.com/pistra/pistra/runtime/jsonrpc"
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
// its answer and a refusal carry.
type Call struct {
	// Method is the operation in the v1.0 vocabulary whatever spelling
	// the client used ("SendMessage" for message/send as for
	// SendMessage, and for POST /message:send), so an access rule on a
	// method holds in every generation and binding; an unknown one is
	// the name as sent (JSON-RPC) or "<METHOD> <path>" (HTTP+JSON).
	Method  string
	Class   Class
	Binding Binding
	// ID is the JSON-RPC id as written (a number, or a string with its
	// quotes), nil for the other bindings.
	ID []byte
}

// Errors ReadJSONRPC answers for a JSON-RPC body that is no A2A call.
var (
	ErrBatch      = errors.New("a JSON-RPC batch is not an A2A call: send one request per POST")
	ErrNotRequest = errors.New("an A2A call is a JSON-RPC request with a method and a non-null id")
)

// ReadJSONRPC reads the call a JSON-RPC body holds, by a targeted scan
// (jsonrpc.ReadMessages: its method and id, nothing else). A2A has no
// batches (an agent answers one request per POST), so an array is
// refused rather than guessed at: what one POST costs would otherwise
// depend on how an agent the gateway cannot see treats it. Nor does it
// have notifications: a request without an id would still be served by
// an agent that acts on it, with an answer no id ties to its hold. Both
// are refused.
func ReadJSONRPC(body []byte) (Call, error) {
	var one [1]jsonrpc.Message
	msgs, batch, err := jsonrpc.ReadMessages(body, one[:0])
	switch {
	case err != nil:
		return Call{}, err
	case batch:
		return Call{}, ErrBatch
	case !msgs[0].IsRequest():
		return Call{}, ErrNotRequest
	}
	o := method(msgs[0].Method)
	return Call{Method: o.name, Class: o.class, Binding: JSONRPC, ID: msgs[0].ID}, nil
}

// ReadHTTPJSON reads the operation of an HTTP+JSON binding request from
// its method and its path below the agent's URL.
func ReadHTTPJSON(httpMethod, path string) Call {
	o := route(httpMethod, path)
	return Call{Method: o.name, Class: o.class, Binding: HTTPJSON}
}
