package dialect

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ModelField locates the top-level "model" value in a request body, so the
// gateway can read the requested name and splice in an upstream one without
// decoding the rest of the body.
type ModelField struct {
	// Name is the decoded requested model.
	Name string
	// Start and End delimit the value in the body, quotes included.
	Start, End int
}

// Errors FindModel returns; the server maps each to a client error.
var (
	ErrNotObject      = errors.New("the body is not a JSON object")
	ErrNoModel        = errors.New(`the body has no "model" field`)
	ErrModelNotString = errors.New(`"model" is not a string`)
	ErrDuplicateModel = errors.New(`"model" appears more than once`)
)

// FindModel scans the top level of a JSON object for the "model" key. It
// expects valid JSON (json.Valid first) but stays in bounds on any input.
// A second top-level "model" is refused: parsers disagree on which copy
// wins, so the name checked here and the one an upstream reads could differ.
func FindModel(body []byte) (ModelField, error) {
	s := scanner{b: body}
	s.space()
	if !s.eat('{') {
		return ModelField{}, ErrNotObject
	}
	var f ModelField
	found := false
	for {
		s.space()
		if s.eat('}') {
			break
		}
		kStart, kEnd, ok := s.str()
		if !ok {
			return ModelField{}, ErrNotObject
		}
		s.space()
		if !s.eat(':') {
			return ModelField{}, ErrNotObject
		}
		s.space()
		vStart := s.i
		if !s.skipValue() {
			return ModelField{}, ErrNotObject
		}
		if isModelKey(body[kStart:kEnd]) {
			if found {
				return ModelField{}, ErrDuplicateModel
			}
			name, err := stringValue(body[vStart:s.i])
			if err != nil {
				return ModelField{}, err
			}
			f, found = ModelField{Name: name, Start: vStart, End: s.i}, true
		}
		s.space()
		if !s.eat(',') {
			s.space()
			if !s.eat('}') {
				return ModelField{}, ErrNotObject
			}
			break
		}
	}
	if !found {
		return ModelField{}, ErrNoModel
	}
	return f, nil
}

// AppendWithModel appends body to dst with the model value replaced by
// model: the bytes before and after the value are copied as they are.
func AppendWithModel(dst, body []byte, f ModelField, model string) []byte {
	dst = append(dst, body[:f.Start]...)
	dst = AppendString(dst, model)
	return append(dst, body[f.End:]...)
}

// AppendString appends s as a JSON string literal.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// isModelKey compares a quoted key with "model"; a key spelled with escapes
// (rare, but legal) is decoded first.
func isModelKey(quoted []byte) bool {
	if string(quoted) == `"model"` {
		return true
	}
	if !hasEscape(quoted) {
		return false
	}
	var k string
	return json.Unmarshal(quoted, &k) == nil && k == "model"
}

func stringValue(v []byte) (string, error) {
	if len(v) < 2 || v[0] != '"' {
		return "", ErrModelNotString
	}
	// The fast path takes the bytes as they are; escapes and invalid UTF-8
	// go through encoding/json so the name matches what decoders see.
	if !hasEscape(v) && utf8.Valid(v) {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", ErrModelNotString
	}
	return s, nil
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// scanner walks JSON bytes without building values.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str consumes a string literal and returns its span, quotes included.
func (s *scanner) str() (start, end int, ok bool) {
	start = s.i
	if !s.eat('"') {
		return 0, 0, false
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return start, s.i, true
		default:
			s.i++
		}
	}
	return 0, 0, false
}

// skipValue consumes one value of any kind. Containers are skipped by
// depth, strings by their quotes, so nothing inside them is examined.
func (s *scanner) skipValue() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		return s.skipContainer()
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}

func (s *scanner) skipContainer() bool {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if _, _, ok := s.str(); !ok {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
	return false
}
