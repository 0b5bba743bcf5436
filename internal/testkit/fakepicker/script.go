package fakepicker

import (
	"net"
	"slices"
	"strings"
	"sync/atomic"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// Request is what one stream received. The script sees it when it
// decides (at the end of the request body, or of the headers for a
// request without one); the response phase's fields fill in after.
type Request struct {
	// Header holds the request headers, keys as sent, values from
	// raw_value (or value when raw_value is empty).
	Header map[string][]string
	// Body is the request body, its chunks joined; BodyChunks counts them.
	Body       []byte
	BodyChunks int
	// Subset is the subset hint's members; SubsetKind says how it came:
	// "list", "string" (a comma list, as some proxies send), or "" for no
	// hint.
	Subset     []string
	SubsetKind string
	// Config is the protocol configuration of the first message;
	// LateConfig says a later message carried one too.
	Config     *extprocv3.ProtocolConfiguration
	LateConfig bool
	// BodyBeforeAnswer says body chunks came before the picker had
	// answered anything (as a client that does not wait must send them).
	BodyBeforeAnswer bool

	// Served is the served endpoint the response phase's metadata named;
	// Status the :status of its response headers; ResponseEnd says an
	// end-of-stream response body came.
	Served      string
	Status      string
	ResponseEnd bool
	// Ended says the stream is over; Closed that the client closed its
	// side (rather than cutting the stream).
	Ended, Closed bool
}

// Script decides the answer to one request. It may run on several
// streams at once.
type Script func(Request) Reply

// Reply is what the picker answers a request.
type Reply struct {
	// Header and Metadata are the pick as the header mutation
	// x-gateway-destination-endpoint and the envoy.lb dynamic metadata
	// name it; "" leaves one out (both "" names nothing, which the
	// protocol does not allow).
	Header, Metadata string
	// Model rewrites the body's model, re-marshalling the whole body as
	// the full picker does (keys reordered); a light picker keeps the
	// body and ignores it.
	Model string
	// Body, when not nil, is replayed as the new body verbatim (after
	// Model's rewrite, in its place), for a picker that writes what it
	// should not.
	Body []byte
	// Status, when not 0, answers with an ImmediateResponse of that
	// status and Text as its body instead of a pick.
	Status int
	Text   string
	// Hang answers nothing, ever: the picker reads on until the stream
	// ends.
	Hang bool
	// Evict answers the response headers with an ImmediateResponse 429,
	// as the full picker evicts a request under flow control after its
	// response has started.
	Evict bool
	// Linger keeps the stream open after the client closed its side,
	// until the client cuts it.
	Linger bool
	// Err ends the stream with this error (a status.Error for a gRPC
	// code).
	Err error
}

// Pick names endpoints (a comma list when more than one) in the header
// and the metadata alike, as the protocol asks.
func Pick(endpoints ...string) Reply {
	v := strings.Join(endpoints, ",")
	return Reply{Header: v, Metadata: v}
}

// Immediate answers the request with a status (429 shed, 503 no
// endpoint) and a text.
func Immediate(status int, text string) Reply { return Reply{Status: status, Text: text} }

// FromHeader picks the endpoints a request header names (a comma list),
// as conformance tests steer a picker; a request without the header goes
// to next.
func FromHeader(name string, next Script) Script {
	name = strings.ToLower(name)
	return func(r Request) Reply {
		if v := r.Header[name]; len(v) > 0 {
			return Pick(v[0])
		}
		return next(r)
	}
}

// RoundRobin picks the members in turn, as a light picker does, from
// those the subset hint allows when there is one: an entry without a port
// allows its address on any port. A hint that allows none is answered
// 503, as the protocol asks.
func RoundRobin(members ...string) Script {
	var next atomic.Uint64
	return func(r Request) Reply {
		eligible := members
		if r.SubsetKind != "" {
			eligible = slices.DeleteFunc(slices.Clone(members), func(m string) bool { return !allowed(r.Subset, m) })
		}
		if len(eligible) == 0 {
			return Immediate(503, "no endpoint in the subset")
		}
		return Pick(eligible[(next.Add(1)-1)%uint64(len(eligible))])
	}
}

func allowed(subset []string, member string) bool {
	host, _, _ := net.SplitHostPort(member)
	for _, s := range subset {
		if s == member || s == host {
			return true
		}
	}
	return false
}
