package extproc

import (
	"bytes"
	"context"
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// Answer is a pick and the stream it came on, open until Done.
type Answer struct {
	// Endpoints are the members the picker named ("host:port", IPv6 in
	// brackets), in its order of preference: the first to try, the rest
	// the fallbacks. Entries are as the picker wrote them where they do
	// not parse as an address, so the caller's membership check refuses
	// (and logs) them. At least one.
	Endpoints []string
	// Body is the request body the picker replayed, nil when it left the
	// body unchanged. A picker may re-marshal the body whole (reordered
	// keys) to change one field; see Model.
	Body  []byte
	model string

	stream   extprocv3.ExternalProcessor_ProcessClient
	original []byte
	cancel   context.CancelFunc
	bound    time.Duration

	// picked is closed when the request phase ended, err set before;
	// drained when the receiver returned, after the stream ended.
	picked, drained chan struct{}
	err             error

	mu     sync.Mutex // serialises sends after the pick
	served string     // the endpoint reported served, "" before Served
	done   bool
}

// Model is the model the picker's replacement body names when it differs
// from the request's, "" when the picker did not change it: the caller
// edits that one field of its own body rather than forwarding the
// picker's re-marshalled copy. nil has no model.
func (a *Answer) Model() string {
	if a == nil {
		return ""
	}
	return a.model
}

// Served tells the picker which endpoint answered, with the status, as
// the response headers' phase of the stream. Only the first call counts,
// and none after Done; nil is a no-op, for callers without a picker. A
// send that fails or does not finish within the pick's bound ends the
// stream, which a picker counts as the request's end.
func (a *Answer) Served(endpoint string, status int) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done || a.served != "" || endpoint == "" {
		return
	}
	a.served = endpoint
	a.boundSend(responseHeaders(endpoint, status))
}

// Done ends the stream: after Served, an empty end of the response body;
// then the close of the sending side, and the wait for the picker to end
// the stream in turn, so what was sent reached it
// (docs/picker.md#the-response-phase). The wait is bounded by the pick's
// bound, after which the stream is cut. No goroutine of the pick outlives
// Done. Idempotent; nil is a no-op.
func (a *Answer) Done() {
	if a == nil {
		return
	}
	a.mu.Lock()
	if a.done {
		a.mu.Unlock()
		return
	}
	a.done = true
	cut := time.AfterFunc(a.bound, a.cancel)
	if a.served != "" {
		_ = a.stream.Send(responseEnd(a.served))
	}
	_ = a.stream.CloseSend()
	a.mu.Unlock()
	<-a.drained
	cut.Stop()
	a.cancel()
}

// boundSend sends a response-phase message, cutting the stream if the
// picker does not take it within the bound. A failure is not the caller's
// concern: the stream is over, and the picker's accounting with it.
func (a *Answer) boundSend(m *extprocv3.ProcessingRequest) {
	cut := time.AfterFunc(a.bound, a.cancel)
	_ = a.stream.Send(m)
	cut.Stop()
}

// receive reads the picker's replies to the request phase until the pick
// is complete or fails, publishes it, then drains the response phase's
// replies (which pistra does not apply: it has already built its answer)
// until the stream ends.
func (a *Answer) receive(chunks int) {
	defer close(a.drained)
	r := reading{chunks: chunks, limit: replacementLimit(len(a.original))}
	for !r.complete() {
		resp, err := a.stream.Recv()
		if err == nil {
			err = r.take(resp)
		}
		if err != nil {
			a.err = streamError(err)
			close(a.picked)
			return
		}
	}
	a.Endpoints, a.err = r.named()
	// A replay of the very bytes sent (a picker that always replays) is
	// no change.
	if a.err == nil && r.replaced && !bytes.Equal(r.body, a.original) {
		a.Body = r.body
		a.model, a.err = replacedModel(r.body, a.original)
	}
	close(a.picked)
	for {
		if _, err := a.stream.Recv(); err != nil {
			return
		}
	}
}

// failed says whether the request phase already failed, so the sender
// stops sending a body nobody reads.
func (a *Answer) failed() bool {
	select {
	case <-a.picked:
		return a.err != nil
	default:
		return false
	}
}
