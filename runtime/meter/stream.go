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
}

// Reset readies m for a new stream of the given usage shape.
func (m *StreamMeter) Reset(shape Shape) { *m = StreamMeter{shape: shape} }

// Event reads one event's data and says what it is to the relay. Usage
// is read wherever the shape puts it: at the top of a chat chunk, in the
// response object of a Responses event, in message_start's message and
// at the top of each Anthropic message_delta.
func (m *StreamMeter) Event(data []byte) Event {
	if m.shape == ShapeChat && string(bytes.TrimSpace(data)) == "[DONE]" {
		m.ended = true
		return Terminal
	}
	s := jsonscan.New(data)
	if s.Kind() != jsonscan.Object {
		return 0
	}
	var f frame
	f.read(&s, m.shape)
	s.End()
	if s.Bad() {
		return 0
	}
	return m.apply(&f)
}

// apply folds a well-formed event into the meter. OpenAI usage objects
// are whole-request figures, restated on every chunk by Gemini's compat
// endpoint, so the latest replaces; Anthropic's counts are cumulative
// and each event restates only some, so they overwrite field by field.
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
	switch {
	case m.shape == ShapeMessages:
		m.c.overwrite(&f.usage)
	case f.usage.obj:
		m.c = f.usage
	}
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
