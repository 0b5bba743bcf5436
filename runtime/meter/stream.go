package meter

import (
	"bytes"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// StreamMeter reads usage, the terminal event and upstream errors from a
// stream as its events pass through the relay, one event's data at a time
// (as runtime/sse hands it over). It never refuses an event: one that is
// not a JSON object, or is malformed, reads as content and leaves the
// usage as it was, because the relay must not fail a stream over what the
// meter could not read.
//
// The zero value meters a chat stream; Reset readies it for another
// stream, so one meter serves request after request without allocating
// (only an upstream error event allocates, for its description).
type StreamMeter struct {
	shape Shape
	c     counts
	ended bool
	err   error
	// clientFault: the last error event blames the request.
	clientFault bool
	// nullUsage is the last event's "usage":null member, as NullUsage
	// reports it.
	nullUsage [2]int
	hasNull   bool
}

// Reset readies m for a new stream of the given usage shape.
func (m *StreamMeter) Reset(shape Shape) { *m = StreamMeter{shape: shape} }

// Event reads one event's data and says what it is to the relay. Usage
// is read wherever the shape puts it: at the top of a chat chunk, in the
// response object of a Responses event, in message_start's message and
// at the top of each Anthropic message_delta.
func (m *StreamMeter) Event(data []byte) Event {
	m.hasNull = false
	if m.shape == ShapeChat && string(bytes.TrimSpace(data)) == "[DONE]" {
		m.ended = true
		return Terminal
	}
	if m.shape == ShapeChat && m.askedContent(data) {
		return 0
	}
	if !m.mayMatter(data) {
		return 0
	}
	// String contents are not checked: an event the meter misreads is
	// content to it, never a reason to fail the stream.
	s := jsonscan.NewValid(data)
	if s.Kind() != jsonscan.Object {
		return 0
	}
	var f frame
	f.read(&s, m.shape)
	s.End()
	if s.Bad() {
		return 0
	}
	m.noteNullUsage(&f, data)
	return m.apply(&f)
}

// mayMatter is a prefilter on the bytes: a chat chunk, or an Anthropic
// event, naming neither usage nor an error (nor, for Anthropic, the end)
// is content, with nothing to read, and most of a stream's events are
// such. Responses events name their end by type alone, so every one is
// read.
func (m *StreamMeter) mayMatter(data []byte) bool {
	switch m.shape {
	case ShapeChat:
		return bytes.Contains(data, quotedUsage) || bytes.Contains(data, quotedError)
	case ShapeMessages:
		return bytes.Contains(data, quotedUsage) || bytes.Contains(data, quotedError) || bytes.Contains(data, messageStop)
	}
	return true
}

// askedContent is the fast path for the common chunk of a stream asked
// for usage: content whose only usage member is the "usage":null asking
// adds, serialised last, as OpenAI and the servers copying it do. That
// member ends the top-level object (a JSON object's last byte closes it),
// so its span is known without a scan, and the chunk has nothing to read.
func (m *StreamMeter) askedContent(data []byte) bool {
	d := bytes.TrimRight(data, " \t\r\n")
	if !bytes.HasSuffix(d, askedSuffix) || bytes.Count(data, quotedUsage) != 1 || bytes.Contains(data, quotedError) {
		return false
	}
	end := len(d) - 1
	m.nullUsage, m.hasNull = [2]int{end - (len(askedSuffix) - 1), end}, true
	return true
}

var askedSuffix = []byte(`,"usage":null}`)

var (
	quotedUsage = []byte(`"usage"`)
	quotedError = []byte(`"error"`)
	messageStop = []byte(`message_stop`)
)

// noteNullUsage keeps the span of a chunk's one "usage":null member.
func (m *StreamMeter) noteNullUsage(f *frame, data []byte) {
	if f.nullUsages != 1 {
		return // none, or twice: leave the chunk as it is
	}
	start, end := f.nullUsage[0], f.nullUsage[1]
	if f.nullFirst {
		i := end
		for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
			i++
		}
		if i < len(data) && data[i] == ',' {
			end = i + 1
		}
	}
	m.nullUsage, m.hasNull = [2]int{start, end}, true
}

// NullUsage is where, in the data last given to Event, its chat chunk's
// top-level "usage":null member lies, with one neighbouring comma, so a
// relay that asked for usage on a client's behalf can cut what asking
// added: data[start:end] removed leaves a well-formed object. ok is false
// when the chunk has no such member (or has it twice).
func (m *StreamMeter) NullUsage() (start, end int, ok bool) {
	return m.nullUsage[0], m.nullUsage[1], m.hasNull
}

// apply folds a well-formed event into the meter (see counts.fold).
func (m *StreamMeter) apply(f *frame) Event {
	var ev Event
	switch m.shape {
	case ShapeChat:
		if f.emptyChoices && f.usage.obj && !f.content && !f.errored {
			ev = UsageOnly
		}
	case ShapeResponses:
		ev = responsesEvent(f.typ)
	case ShapeMessages:
		ev = messagesEvent(f.typ)
	}
	m.c.fold(m.shape, &f.usage)
	if f.errored {
		ev |= Error
	}
	if ev&Error != 0 {
		m.err = f.failure.err(f.typ)
		m.clientFault = f.failure.clientFault()
	}
	if ev&Terminal != 0 {
		m.ended = true
	}
	return ev
}

// responsesEvent flags a Responses event by its type. response.done is
// not in OpenAI's union but some compatible backends end streams with it.
func responsesEvent(typ []byte) Event {
	switch string(typ) {
	case "response.completed", "response.incomplete", "response.done":
		return Terminal
	case "response.failed":
		return Terminal | Error
	case "error":
		return Error
	}
	return 0
}

// messagesEvent flags an Anthropic event by its type.
func messagesEvent(typ []byte) Event {
	switch string(typ) {
	case "message_stop":
		return Terminal
	case "error":
		return Error
	}
	return 0
}

// Usage is the usage read so far, normalised as ReadAnswer normalises it;
// Reported is false while no event has carried any.
func (m *StreamMeter) Usage() Usage { return m.c.usage(m.shape) }

// Ended reports whether the stream's terminal event has been read; a
// stream that stops without one is incomplete, whatever else it carried.
func (m *StreamMeter) Ended() bool { return m.ended }

// UpstreamError describes the last error event the upstream sent (its
// type or code and message, bounded), or is nil if it sent none.
func (m *StreamMeter) UpstreamError() error { return m.err }

// ClientFault reports whether the last error event blamed the request
// itself (invalid_request_error and its kin): sending it again, to this
// provider or another, would fail the same way.
func (m *StreamMeter) ClientFault() bool { return m.clientFault }
