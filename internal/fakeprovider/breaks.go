package fakeprovider

import (
	"fmt"
	"net/http"
)

// Break spoils an answer after its 200 went out, the ways a real upstream's
// answers go wrong on the way to a gateway: a body cut off, a stream that
// stops short of its end, an error event where the content should be. A
// break applies to answers of its kind only (BreakHalfBody to non-stream
// answers, the others to streams), and Faults.BreakCount counts those.
type Break int

const (
	BreakNone Break = iota
	// BreakHalfBody sends a non-stream answer's headers, with the whole
	// body's Content-Length, then half the body, then drops the
	// connection: the client reads an unexpected EOF.
	BreakHalfBody
	// BreakNoTerminal ends a stream cleanly without its terminal event:
	// no data: [DONE] (chat, completions), no response.completed or
	// response.incomplete (Responses), no message_stop (Anthropic).
	BreakNoTerminal
	// BreakOpeningError sends, as a stream's first event, an error event in
	// the dialect's shape (see streamError), and ends the stream there.
	BreakOpeningError
	// BreakMidError sends the error event right after the stream's first
	// content delta, in place of whatever came next, and ends the stream
	// there.
	BreakMidError
)

// The text forms of the breaks, in flags and JSON.
var breakNames = [...]string{
	BreakNone:         "",
	BreakHalfBody:     "half-body",
	BreakNoTerminal:   "no-terminal",
	BreakOpeningError: "opening-error",
	BreakMidError:     "mid-error",
}

// ParseBreak reads a break's text form; "" is BreakNone.
func ParseBreak(s string) (Break, error) {
	for b, name := range breakNames {
		if s == name {
			return Break(b), nil
		}
	}
	return BreakNone, fmt.Errorf("faults: break %q: want half-body, no-terminal, opening-error or mid-error", s)
}

// String is the text form ParseBreak reads.
func (b Break) String() string {
	if b < 0 || int(b) >= len(breakNames) {
		return fmt.Sprintf("Break(%d)", int(b))
	}
	return breakNames[b]
}

// MarshalText writes the text form.
func (b Break) MarshalText() ([]byte, error) {
	if b < 0 || int(b) >= len(breakNames) {
		return nil, fmt.Errorf("faults: unknown break %d", int(b))
	}
	return []byte(b.String()), nil
}

// UnmarshalText reads the text form.
func (b *Break) UnmarshalText(text []byte) error {
	v, err := ParseBreak(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// inStreams reports whether b spoils streams rather than whole answers.
func (b Break) inStreams() bool { return b >= BreakNoTerminal }

// breakFor returns the break one answer suffers: a stream when stream is
// set, else a whole answer. Each answer of the break's kind counts toward
// BreakCount.
func (a *activeFaults) breakFor(stream bool) Break {
	if a == nil || a.f.Break == BreakNone || a.f.Break.inStreams() != stream {
		return BreakNone
	}
	if a.f.BreakCount > 0 && a.broken.Add(1) > int64(a.f.BreakCount) {
		return BreakNone
	}
	return a.f.Break
}

// InjectedStreamError is the message of the OpenAI-dialect error events a
// break sends; the Anthropic ones say "Overloaded", as Anthropic does.
const InjectedStreamError = "fake provider: injected stream error"

// streamErrorShape is the form of error event a stream sends.
type streamErrorShape int

const (
	// errorChat is a data-only {"error":{...}} chunk, as Chat Completions
	// (and legacy completions) send mid-stream.
	errorChat streamErrorShape = iota
	// errorResponses is event: error with {"type":"error","code",
	// "message","param","sequence_number"}.
	errorResponses
	// errorAnthropic is event: error with {"type":"error","error":
	// {"type":"overloaded_error","message":"Overloaded"},"request_id"}.
	errorAnthropic
)

func (x *exchange) streamErrorShape() streamErrorShape {
	switch {
	case x.wire() == DialectAnthropic:
		return errorAnthropic
	case x.r.URL.Path == "/v1/responses":
		return errorResponses
	}
	return errorChat
}

// appendError writes the stream's error event into its buffer.
func (st *stream) appendError() []byte {
	switch st.errShape {
	case errorResponses:
		b := append(st.begin("error"), `{"type":"error","code":"server_error","message":`...)
		b = appendString(b, InjectedStreamError)
		b = append(b, `,"param":null,"sequence_number":`...)
		b = appendInt(b, st.sent) // Responses events are numbered from 0
		return append(b, '}')
	case errorAnthropic:
		b := append(st.begin("error"), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":`...)
		b = appendString(b, st.requestID)
		return append(b, '}')
	}
	b := append(st.begin(""), `{"error":{"message":`...)
	b = appendString(b, InjectedStreamError)
	return append(b, `,"type":"server_error","param":null,"code":null}}`...)
}

// writeHalf sends a whole answer's headers and half its body b, then drops
// the connection.
func (x *exchange) writeHalf(b []byte) {
	_, _ = x.w.Write(b[:len(b)/2])
	rc := http.NewResponseController(x.w)
	_ = rc.Flush()
	dropConnection(rc)
}
