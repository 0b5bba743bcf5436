package a2a

import (
	"net/http"
	"net/url"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
)

// Gate admits agent calls: who the key is, whether its profile may reach
// the agent, the agent's suspension, access rules, and the hold of what
// the call draws. It is safe for concurrent use.
type Gate interface {
	// Admit is asked before anything is sent to agent. It returns where
	// the call goes and the ticket it took, or the refusal the client is
	// answered with (nothing is then sent).
	Admit(r *http.Request, agent string, c *Call) (*Admission, *dialect.Error)
}

// Admission is an admitted call.
type Admission struct {
	Target *Target
	Ticket Ticket
}

// Target is an agent resolved for serving.
type Target struct {
	// URL is the agent's URL (its JSON-RPC endpoint); the rest of the
	// agent's surface (its card, an HTTP+JSON binding) is below it.
	URL *url.URL
	// Header is set on every request to the agent: its static headers and
	// its credential (a secret: never logged).
	Header http.Header
	// Transport reaches the agent; nil: the proxy's.
	Transport http.RoundTripper
	// Timeout bounds the wait for the agent's response headers; 0: none.
	Timeout time.Duration
}

// Ticket closes an admitted call, exactly once.
type Ticket interface {
	Close(o Outcome)
}

// Outcome is how an admitted call ended.
type Outcome struct {
	// Status is what the client was sent.
	Status int
	// Answered: the agent took the call and answered it with something
	// other than an error (a 2xx that is no JSON-RPC error; for a stream,
	// a first event that is none). Only an answered call is charged,
	// whatever the task then does and however the relay ends: a call
	// that never reached the agent, that it refused, or that broke
	// before its answer began is given back.
	Answered bool
	// Err says why the call did not end well, nil when it did.
	Err error
}
