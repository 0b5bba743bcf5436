package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// bufferPool holds request-body buffers. Buffers that grew past
// maxPooledBuffer are left to the collector so one huge request does not
// pin its memory in the pool.
var bufferPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxPooledBuffer = 1 << 20

// GetBuffer takes an empty buffer from the pool.
func GetBuffer() *[]byte { return bufferPool.Get().(*[]byte) }

// PutBuffer returns b to the pool; nothing may use it afterwards.
func PutBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	bufferPool.Put(b)
}

// ErrTooLarge is ReadBounded's answer to a body longer than its bound.
var ErrTooLarge = errors.New("body exceeds its bound")

// ReadBounded reads r whole into buf, failing with ErrTooLarge past max
// bytes. It is the one reader of bodies held whole: client requests and
// the upstream answers checked before they are relayed.
func ReadBounded(r io.Reader, buf *[]byte, max int64) error {
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):int(min(int64(cap(b)), max+1))])
		b = b[:len(b)+n]
		*buf = b
		if int64(len(b)) > max {
			return ErrTooLarge
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Body is a client request body held for every attempt of one request. The
// client's bytes are never modified; a candidate whose upstream model
// differs from the requested one gets a copy with only the model value
// replaced, and a translated candidate gets the translator's output (see
// translated.go).
//
// An http.Transport may still be writing a request body after RoundTrip
// returns (an upstream can answer before reading it all), so Body counts
// the upstream writes it starts and only recycles its buffers once every
// one has ended: h1 closes the body when its write is done, net/http
// reports the write (httptrace's WroteRequest). A write never reported
// (a dial that failed) leaves the buffers to the collector.
type Body struct {
	raw  *[]byte
	head dialect.Head
	edit *[]byte
	// editModel and editAsk are what edit holds: the client's body for
	// that model, asking for stream usage when editAsk is set.
	editModel string
	editAsk   bool
	xlat      translation
	writes    *writes
}

// writes counts one request's upstream body writes still in progress. It
// is fresh per request, so a late close from an abandoned request cannot
// touch the next one's count.
type writes struct{ pending atomic.Int32 }

// sentBody is one upstream write of a body: its close, which a transport
// may make more than once, counts once. The embedded *bytes.Reader's
// WriteTo lets a writer take the bytes in one write.
type sentBody struct {
	bytes.Reader
	w      *writes
	closed atomic.Bool
	// trace reports the write to net/http's callers (cutRoundTrip), as
	// its Transport closes only the wrapper it is sent in.
	trace httptrace.ClientTrace
}

func (s *sentBody) wrote(httptrace.WroteRequestInfo) { s.Close() }

func (s *sentBody) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.w.pending.Add(-1)
	}
	return nil
}

// Reset makes b hold raw (a pooled buffer, now owned by b) whose model
// value is at f. What the body says about streaming is unknown until
// SetStream.
func (b *Body) Reset(raw *[]byte, f dialect.ModelField) {
	b.raw, b.head, b.edit, b.editModel, b.editAsk = raw, dialect.Head{Model: f}, nil, "", false
	b.xlat = translation{}
	b.writes = &writes{}
}

// SetStream records what the body says about streaming, read with its
// model (dialect.ReadHead).
func (b *Body) SetStream(f dialect.StreamFields) { b.head.Stream = f }

// CanAskUsage reports whether the client streams without asking for usage,
// and the body can be edited to ask.
func (b *Body) CanAskUsage() bool { return b.head.Stream.CanAskUsage() }

// AskedUsage reports whether the client's stream asked for its usage
// chunk itself (stream_options.include_usage: true).
func (b *Body) AskedUsage() bool { return b.head.Stream.AskedUsage }

// Requested is the model the client asked for.
func (b *Body) Requested() string { return b.head.Model.Name }

// Bytes is the body as the client sent it.
func (b *Body) Bytes() []byte { return *b.raw }

// forCandidate returns the body to send to candidate c: the client's with
// c's model, asking for stream usage when askUsage is set, or for a
// translated candidate the translation prepared for it.
func (b *Body) forCandidate(c *plan.Candidate, askUsage bool) []byte {
	if c.Translate != plan.TranslateNone {
		return *b.xlat.buf
	}
	return b.forModel(c.Model, askUsage)
}

// forModel returns the body to send to an upstream that calls the model
// name, asking for stream usage when askUsage is set.
func (b *Body) forModel(name string, askUsage bool) []byte {
	if name == b.head.Model.Name && !askUsage {
		return *b.raw
	}
	if b.edit != nil && name == b.editModel && askUsage == b.editAsk {
		return *b.edit
	}
	if b.edit == nil || b.writes.pending.Load() != 0 {
		// A transport may still read the old copy: start a fresh one and
		// let the collector have the old.
		b.edit = GetBuffer()
	}
	*b.edit = dialect.AppendRequest((*b.edit)[:0], *b.raw, &b.head, name, askUsage)
	b.editModel, b.editAsk = name, askUsage
	return *b.edit
}

// Release recycles b's buffers (see Sent) and forgets the request.
func (b *Body) Release() {
	b.Sent()
	b.xlat, b.writes = translation{}, nil
}

// Sent is told that no attempt will send the body again (its answer is
// being relayed): the buffers are recycled now rather than when the request
// ends, so a stream that runs for minutes holds none of them, unless an
// upstream write may still be reading them (or never reported, as when a
// dial failed: those buffers go to the collector instead). What was read
// of the body (model, stream fields, translation) stays; its bytes are
// gone.
func (b *Body) Sent() {
	if b.raw == nil {
		return
	}
	if b.writes.pending.Load() == 0 {
		PutBuffer(b.raw)
		if b.edit != nil {
			PutBuffer(b.edit)
		}
		if b.xlat.buf != nil {
			PutBuffer(b.xlat.buf)
		}
	}
	b.raw, b.edit, b.xlat.buf = nil, nil, nil
}

// resentBody is a body for a transport's own resend (GetBody): a copy,
// uncounted. net/http may close a resent body while it still reads it
// (an HTTP/2 stream reset, a cancelled write), and nothing it reports
// then tells which write ended; a copy is safe whenever the buffers
// recycle. Resends are rare: a reused connection found dead.
func resentBody(data []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(bytes.Clone(data))) }

// reader returns a reader over data for one upstream write, counted until
// the transport closes it.
func (b *Body) reader(data []byte) io.ReadCloser {
	b.writes.pending.Add(1)
	s := &sentBody{w: b.writes}
	s.Reset(data)
	return s
}
