package testkit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// AnyHost keys the replies for every host that has none of its own.
const AnyHost = "*"

// Reply is one canned upstream answer.
type Reply struct {
	Status int
	// Header is shared by every answer made from the reply: the gateway
	// may read it, not change it. A Content-Length in it sets the
	// response's ContentLength, as net/http does; otherwise it is -1.
	Header http.Header
	// Parts are the body, handed out one per Read, as a chunked upstream
	// delivers its events.
	Parts []string
	// ReadErr, when set, follows the last part instead of io.EOF.
	ReadErr error
	// Endless repeats Parts for ever.
	Endless bool
	// Delay holds the answer back once the request is written, or until
	// the request is cancelled.
	Delay time.Duration
	// Closed, when set, is closed once the gateway closes a body answered
	// from this reply.
	Closed chan struct{}
	// Err is a transport failure instead of an answer: a connection that
	// failed before the request went out. The request is recorded as the
	// gateway made it, but WroteRequest is not reported, as net/http does
	// not report it when a dial fails.
	Err error
}

// JSON is a reply with a JSON body and its Content-Length; header adds
// name, value pairs.
func JSON(status int, body string, header ...string) Reply {
	h := http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(body))}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return Reply{Status: status, Header: h, Parts: []string{body}}
}

// SSE is a 200 event stream whose events are parts, one per Read.
func SSE(parts ...string) Reply {
	return Reply{Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Parts: parts}
}

// Call is one request as the upstream received it.
type Call struct {
	Path   string
	Header http.Header
	Body   string
}

// Upstream is an in-memory http.RoundTripper standing in for every
// upstream: it answers each host's requests with that host's replies in
// turn, repeating the last, and records every request. Like net/http's
// transport it consumes the request body and closes it before reporting
// httptrace's WroteRequest, which the proxy waits for before it recycles
// body buffers. It is safe for concurrent use.
type Upstream struct {
	mu       sync.Mutex
	replies  map[string][]*reply
	calls    map[string][]Call
	count    int
	unrecord bool
}

// reply is a Reply with what every answer needs worked out once, so that
// answering allocates nothing but the answer itself.
type reply struct {
	Reply
	status        string
	contentLength int64
	closeOnce     sync.Once
}

// NewUpstream serves replies, keyed by host (or AnyHost).
func NewUpstream(replies map[string][]Reply) *Upstream {
	u := &Upstream{replies: map[string][]*reply{}, calls: map[string][]Call{}}
	for host, rs := range replies {
		for _, r := range rs {
			rep := &reply{Reply: r, status: strconv.Itoa(r.Status) + " " + http.StatusText(r.Status), contentLength: -1}
			if cl := r.Header.Get("Content-Length"); cl != "" {
				n, err := strconv.ParseInt(cl, 10, 64)
				if err != nil {
					panic(fmt.Sprintf("testkit: reply for %s: Content-Length %q", host, cl))
				}
				rep.contentLength = n
			}
			u.replies[host] = append(u.replies[host], rep)
		}
	}
	return u
}

// Unrecorded makes u keep no record of requests (Calls is empty; Count
// still counts) and read their bodies into nothing, so that a benchmark's
// allocs/op are the gateway's plus one, the answer. Call it before u is
// used.
func (u *Upstream) Unrecorded() *Upstream {
	u.unrecord = true
	return u
}

// Calls returns the requests host received, in order.
func (u *Upstream) Calls(host string) []Call {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Call(nil), u.calls[host]...)
}

// Count is how many requests u received, over every host.
func (u *Upstream) Count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.count
}

// RoundTrip answers r with its host's next reply.
func (u *Upstream) RoundTrip(r *http.Request) (*http.Response, error) {
	body := u.consume(r)
	rep, err := u.next(r, body)
	if err != nil {
		return nil, err
	}
	if rep.Err != nil {
		return nil, rep.Err
	}
	if t := httptrace.ContextClientTrace(r.Context()); t != nil && t.WroteRequest != nil {
		t.WroteRequest(httptrace.WroteRequestInfo{})
	}
	if rep.Delay > 0 {
		t := time.NewTimer(rep.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	a := &answer{body: partsBody{rep: rep}}
	a.resp = http.Response{Status: rep.status, StatusCode: rep.Status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rep.Header, Body: &a.body, ContentLength: rep.contentLength, Request: r}
	return &a.resp, nil
}

// consume reads and closes r's body, returning it unless u is unrecorded.
func (u *Upstream) consume(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	defer r.Body.Close()
	if u.unrecord {
		_, _ = io.Copy(io.Discard, r.Body)
		return ""
	}
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// next records r and picks its host's reply.
func (u *Upstream) next(r *http.Request, body string) (*reply, error) {
	host := r.URL.Host
	u.mu.Lock()
	defer u.mu.Unlock()
	u.count++
	if !u.unrecord {
		u.calls[host] = append(u.calls[host], Call{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	}
	key := host
	rs := u.replies[key]
	if len(rs) == 0 {
		key, rs = AnyHost, u.replies[AnyHost]
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("testkit: no reply for host %q", host)
	}
	if len(rs) > 1 {
		u.replies[key] = rs[1:]
	}
	return rs[0], nil
}

// answer is a response and its body in one allocation.
type answer struct {
	resp http.Response
	body partsBody
}

var errReadAfterClose = errors.New("testkit: read on closed response body")

// partsBody hands out its reply's parts.
type partsBody struct {
	rep    *reply
	part   int // next part to hand out
	off    int // how much of it is already out
	closed atomic.Bool
}

func (b *partsBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errReadAfterClose
	}
	parts := b.rep.Parts
	if b.part == len(parts) {
		if !b.rep.Endless || len(parts) == 0 {
			if b.rep.ReadErr != nil {
				return 0, b.rep.ReadErr
			}
			return 0, io.EOF
		}
		b.part = 0
	}
	n := copy(p, parts[b.part][b.off:])
	if b.off += n; b.off == len(parts[b.part]) {
		b.part, b.off = b.part+1, 0
	}
	return n, nil
}

func (b *partsBody) Close() error {
	if !b.closed.Swap(true) && b.rep.Closed != nil {
		b.rep.closeOnce.Do(func() { close(b.rep.Closed) })
	}
	return nil
}
