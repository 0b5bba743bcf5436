package meter

import (
	"errors"
	"strings"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// failure is an upstream error event's description as the wire wrote it:
// slices of the event, valid only while it is read.
type failure struct {
	kind, code, message []byte
}

// read consumes an "error" member's value and reports whether it names an
// error at all (null does not): an object with the type, code and message
// the dialects put there, or, from some compatible servers, a bare string.
func (fl *failure) read(s *jsonscan.Scanner) bool {
	switch s.Kind() {
	case jsonscan.Null:
		s.Skip()
		return false
	case jsonscan.String:
		fl.message, _ = s.RawString()
		return true
	}
	for m := s.Object(); m.Next(); { // another kind is still an error, undescribed
		switch string(m.Key()) {
		case "type":
			fl.kind = text(s)
		case "code":
			fl.code = text(s)
		case "message":
			fl.message = text(s)
		default:
			s.Skip()
		}
	}
	return true
}

// clientFaults are the error types both dialects use for a request that
// cannot succeed as sent.
var clientFaults = [...]string{"invalid_request_error", "authentication_error", "permission_error",
	"not_found_error", "request_too_large"}

// clientFault reports whether the error blames the request.
func (fl *failure) clientFault() bool {
	for _, k := range clientFaults {
		if string(fl.kind) == k {
			return true
		}
	}
	return false
}

// text consumes a string or a number (a code is sometimes an HTTP status)
// and returns it raw; any other value reads as nothing.
func text(s *jsonscan.Scanner) []byte {
	if s.Kind() == jsonscan.Number {
		n, _ := s.Number()
		return n
	}
	v, _ := s.RawString()
	return v
}

// What a description keeps of an upstream's words: enough to tell errors
// apart in a log line, bounded because the upstream chose the length.
const (
	maxLabel   = 64
	maxMessage = 256
)

// err describes the failure; event is the type of the event that carried
// it, the label when the error itself names no type or code.
func (fl *failure) err(event []byte) error {
	var labels []string
	for _, part := range [...][]byte{fl.kind, fl.code} {
		if len(part) > 0 {
			labels = append(labels, clip(part, maxLabel))
		}
	}
	if len(labels) == 0 && len(event) > 0 {
		labels = append(labels, clip(event, maxLabel))
	}
	desc := "upstream stream error"
	if len(labels) > 0 {
		desc += ": " + strings.Join(labels, " ")
	}
	if len(fl.message) > 0 {
		desc += ": " + clip(fl.message, maxMessage)
	}
	return errors.New(desc)
}

// clip decodes raw string contents and keeps at most limit bytes of them,
// cut at a character boundary. The raw bytes are cut first, so a huge
// message is never decoded whole; a cut through an escape backs off to
// the escape's start.
func clip(raw []byte, limit int) string {
	raw = raw[:min(len(raw), limit)]
	out, ok := jsonscan.Unquote(nil, raw)
	for !ok && len(raw) > 0 {
		raw = raw[:len(raw)-1]
		out, ok = jsonscan.Unquote(nil, raw)
	}
	// Decoding can lengthen (an invalid byte becomes U+FFFD); what it
	// returns is valid UTF-8, so only a rune cut at the end is dropped.
	return strings.ToValidUTF8(string(out[:min(len(out), limit)]), "")
}
