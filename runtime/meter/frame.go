package meter

import "github.com/pistra/pistra/runtime/jsonscan"

// frame is what one stream event says, gathered while it is scanned and
// applied to the meter only once the whole event has proved well-formed.
type frame struct {
	typ     []byte // Responses' and Anthropic's event type, raw
	usage   counts
	failure failure
	errored bool // a top-level "error" that is not null

	// Chat only: what the usage-only test needs.
	emptyChoices bool // "choices" is []
	content      bool // a member that carries, or may carry, output
	// nullUsage is the span of a top-level "usage":null member with one
	// neighbouring comma, for a relay to cut; nullUsages counts them.
	nullUsage  [2]int
	nullUsages int
	nullFirst  bool
}

// read walks an event's top-level members. Usage is read wherever the
// shape puts it whatever the event's type says, since "type" may come
// after it and the scan is a single forward pass; in practice only the
// events that should carry usage do.
func (f *frame) read(s *jsonscan.Scanner, shape Shape) {
	v := vocabOf(shape)
	m := s.Object()
	for first := true; ; first = false {
		before := s.Pos() // past the brace, or the previous member's value
		if !m.Next() {
			return
		}
		key := m.Key()
		switch {
		case string(key) == "error":
			f.errored = f.failure.read(s) || f.errored
		case shape == ShapeChat && string(key) == "usage" && s.Kind() == jsonscan.Null:
			s.Skip()
			f.noteNullUsage(s, before, first)
		case shape == ShapeChat:
			f.chatMember(s, v, key)
		case string(key) == "type":
			f.typ, _ = s.RawString()
		case shape == ShapeResponses && string(key) == "response",
			shape == ShapeMessages && string(key) == "message":
			f.nested(s, v)
		case shape == ShapeMessages && string(key) == "usage":
			readUsage(s, v, &f.usage)
		case shape == ShapeResponses && string(key) == "code":
			f.failure.code = text(s) // Responses' error event states
		case shape == ShapeResponses && string(key) == "message":
			f.failure.message = text(s) // its code and message at the top
		default:
			s.Skip()
		}
	}
}

// noteNullUsage records the "usage":null member whose value just ended:
// from the end of the member before it, or for the first member from the
// brace (the comma after it is added once the event's bytes are at hand).
func (f *frame) noteNullUsage(s *jsonscan.Scanner, before int, first bool) {
	f.nullUsages++
	f.nullUsage = [2]int{before, s.Pos()}
	f.nullFirst = first
}

// nested reads the response (Responses) or message (Anthropic) object an
// event carries: its usage, and the error a failed response states.
func (f *frame) nested(s *jsonscan.Scanner, v *vocab) {
	for m := s.Object(); m.Next(); {
		switch string(m.Key()) {
		case "usage":
			f.replaceUsage(s, v)
		case "error":
			f.failure.read(s)
		default:
			s.Skip()
		}
	}
}

// replaceUsage reads a usage object that stands for the whole request, so
// it replaces any read before it in the event; null leaves them.
func (f *frame) replaceUsage(s *jsonscan.Scanner, v *vocab) {
	if s.Kind() == jsonscan.Object {
		f.usage = counts{}
	}
	readUsage(s, v, &f.usage)
}

// chatMember reads one member of a chat chunk. For the usage-only test,
// content is defined narrowly as anything that is not known to carry no
// output: choices with elements (or that are not an array), and every
// member not listed in chatMetadata, unless it is null. Erring toward content is the safe
// side, since a chunk wrongly kept costs the client an extra usage chunk
// while one wrongly dropped loses output.
func (f *frame) chatMember(s *jsonscan.Scanner, v *vocab, key []byte) {
	switch string(key) {
	case "choices":
		if emptyArray(s) {
			f.emptyChoices = true
		} else {
			f.content = true
		}
	case "usage":
		f.replaceUsage(s, v)
	default:
		if s.Kind() != jsonscan.Null && !chatMetadata(key) {
			f.content = true
		}
		s.Skip()
	}
}

// chatMetadata reports a chunk member that describes the stream rather
// than carrying output: OpenAI's identity, timing and routing fields, its
// obfuscation padding, OpenRouter's name of the provider that served and
// Groq's request metadata.
func chatMetadata(key []byte) bool {
	switch string(key) {
	case "id", "object", "created", "model", "system_fingerprint",
		"service_tier", "obfuscation", "provider", "x_groq":
		return true
	}
	return false
}

// emptyArray consumes a value and reports whether it is [].
func emptyArray(s *jsonscan.Scanner) bool {
	if s.Kind() != jsonscan.Array {
		s.Skip()
		return false
	}
	n := 0
	for e := s.Array(); e.Next(); n++ {
		s.Skip()
	}
	return n == 0
}
