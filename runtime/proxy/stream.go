package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/sse"
)

// streamRelay reads an upstream event stream as it is relayed: it splits
// it into events, meters each, and decides which bytes go to the client.
// Only the usage-only chunk the gateway asked for on the client's behalf
// is ever held back; everything else passes byte for byte, in the reads it
// arrived in. One is pooled per stream in flight.
type streamRelay struct {
	sse   sse.Reader
	meter meter.StreamMeter
	// strip removes the usage-only chunk (meter.UsageOnly): the client did
	// not ask for it.
	strip bool
	// first holds what the first event was, once it has come.
	first    meter.Event
	gotFirst bool
	// Bytes decided on so far. While the stream is checked before it is
	// committed, and whenever strip is on, out holds the bytes that go to
	// the client and pending the event not yet complete; otherwise the
	// upstream's reads are passed as they are and neither is used.
	copying bool
	out     []byte
	pending []byte
	// spilled: part of the event being read went out with the bytes
	// before it (pending grew past maxPending), so it cannot be dropped.
	spilled bool
	// p and cut: the read being fed, and where in it the bytes not yet
	// decided on start.
	p   []byte
	cut int
}

var streamPool = sync.Pool{New: func() any { return new(streamRelay) }}

func getStream(shape meter.Shape, strip bool) *streamRelay {
	s := streamPool.Get().(*streamRelay)
	s.sse.Reset()
	s.meter.Reset(shape)
	s.strip, s.first, s.gotFirst, s.copying, s.spilled = strip, 0, false, true, false
	s.out, s.pending = s.out[:0], s.pending[:0]
	return s
}

// maxPooledStream bounds the buffers a pooled relay keeps.
const maxPooledStream = 1 << 20

func putStream(s *streamRelay) {
	s.p = nil
	if cap(s.out) > maxPooledStream || cap(s.pending) > maxPooledStream {
		return
	}
	streamPool.Put(s)
}

var errNoFirstEvent = errors.New("the stream ended before its first event")

// readFirst reads body until the stream's first event is complete, holding
// what it read in s.out for the relay to send once the attempt is known
// good. It reports what the first event was.
func (s *streamRelay) readFirst(body io.Reader) (meter.Event, error) {
	for !s.gotFirst {
		buf, n, err := readPooled(body)
		var ferr error
		if n > 0 {
			ferr = s.feed(buf[:n])
		}
		copyPool.Put(buf) // feed copied what it keeps
		if ferr != nil {
			return 0, ferr
		}
		if s.gotFirst {
			break
		}
		if err == io.EOF {
			return 0, errNoFirstEvent
		}
		if err != nil {
			return 0, err
		}
	}
	return s.first, nil
}

// errHeldTooLong: bytes that make no event (comments, keepalives, lines
// with no data) piled up past what is held before the first event.
var errHeldTooLong = fmt.Errorf("more than %d bytes before the first event", sse.MaxEventBytes)

// maxPending bounds the bytes held back, once committed, while an event is
// incomplete: past it they go to the client, and the event they belong to
// can no longer be dropped.
const maxPending = 64 << 10

// feed reads p, one upstream read. With copying on, the bytes to send are
// appended to s.out; otherwise p itself is what to send.
func (s *streamRelay) feed(p []byte) error {
	s.p, s.cut = p, 0
	err := s.sse.Feed(p, s)
	if s.copying {
		s.pending = append(s.pending, p[s.cut:]...)
		switch {
		case !s.gotFirst && len(s.out)+len(s.pending) > sse.MaxEventBytes:
			err = errHeldTooLong
		case s.gotFirst && len(s.pending) > maxPending:
			s.out = append(s.out, s.pending...)
			s.pending, s.spilled = s.pending[:0], true
		}
	}
	s.p = nil
	if err != nil {
		return fmt.Errorf("upstream stream: %w", err)
	}
	return nil
}

// Event meters one event and, when copying, keeps or drops its bytes.
func (s *streamRelay) Event(data []byte) error {
	ev := s.meter.Event(data)
	if !s.gotFirst {
		s.first, s.gotFirst = ev, true
	}
	if !s.copying {
		return nil
	}
	end := s.sse.EventEnd()
	if end < 0 { // the stream's last, unterminated event: all that is pending
		end = len(s.p)
	}
	if s.spilled || !(s.strip && ev&meter.UsageOnly != 0) {
		at := len(s.out)
		s.out = append(s.out, s.pending...)
		s.out = append(s.out, s.p[s.cut:end]...)
		if s.strip && !s.spilled {
			s.dropNullUsage(at, data)
		}
	}
	s.pending, s.cut, s.spilled = s.pending[:0], end, false
	return nil
}

// dropNullUsage removes, from the event just appended to s.out at at, the
// "usage":null member asking for usage added to every chunk, so the client
// gets each chunk as it would have without the gateway's asking. Only an
// event whose data is on one line is rewritten, found where the line's
// value starts: after "data:" and one optional space, as SSE reads it.
func (s *streamRelay) dropNullUsage(at int, data []byte) {
	i := bytes.Index(s.out[at:], dataField)
	if i < 0 {
		return
	}
	from := at + i + len(dataField)
	if from < len(s.out) && s.out[from] == ' ' {
		from++
	}
	if len(s.out)-from < len(data) || string(s.out[from:from+len(data)]) != string(data) {
		return
	}
	start, end, ok := s.meter.NullUsage()
	if !ok || end > len(data) {
		return
	}
	s.out = append(s.out[:from+start], s.out[from+end:]...)
}

var dataField = []byte("data:")

// finish reads what the upstream left without a closing blank line.
func (s *streamRelay) finish() {
	s.p, s.cut = s.pending, 0
	s.pending = s.pending[:0:0] // the event's bytes are s.p now
	_ = s.sse.Finish(s)         // a cut-off last event is judged by Ended, below
	if s.copying && s.cut < len(s.p) {
		// Not an event after all (no data line): the bytes still go.
		s.out = append(s.out, s.p[s.cut:]...)
	}
	s.pending, s.p = s.p[:0], nil
}

// commit is called once the checked start is taken for sending: from
// then on reads pass as they are, unless events must be dropped.
func (s *streamRelay) commit() {
	if !s.strip {
		s.out = append(s.out, s.pending...)
		s.pending = s.pending[:0]
		s.copying = false
	}
}

// takeOut returns the bytes decided on and empties the buffer.
func (s *streamRelay) takeOut() []byte {
	out := s.out
	s.out = s.out[:0]
	return out
}

// The stream as the pump copies it: what inspect read (the checked start,
// once committed), then each read as it came, or the bytes kept of it when
// events are being dropped. A stream that ends cleanly without its
// terminal event is short; it is told so in its dialect (end).
var _ source = (*streamRelay)(nil)

func (s *streamRelay) start() ([]byte, error) {
	s.commit()
	return s.takeOut(), nil
}

func (s *streamRelay) next(p []byte) ([]byte, error) {
	if err := s.feed(p); err != nil {
		return nil, err
	}
	if s.copying {
		return s.takeOut(), nil
	}
	return p, nil
}

func (s *streamRelay) end(readErr error) ([]byte, error) {
	if readErr != nil {
		return nil, readErr
	}
	s.finish()
	if !s.meter.Ended() {
		return s.takeOut(), errNoTerminal
	}
	return s.takeOut(), nil
}

func (s *streamRelay) seen(r *seen) {
	*r = passthroughUsage(s.meter.Usage())
	r.reported, r.told = s.meter.UpstreamError(), toldByEvent
}
