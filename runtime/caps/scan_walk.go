package caps

import "strconv"

// This file holds the scanner's structured reads: iterating an object's
// members or an array's elements, and reading a value as the one type a
// check wants. Every read consumes its value whatever its shape, so a reader
// built from them stays in step with the document.

// members iterates over an object's members; see scanner.object.
type members struct {
	s   *scanner
	n   int
	key []byte
}

// object starts reading the value at pos as an object. A value of any other
// shape is skipped and yields no members: shapes the reader does not expect
// are not guessed at.
func (s *scanner) object() members {
	if s.peek() != '{' {
		s.skip()
		return members{s: s, n: -1}
	}
	s.pos++
	return members{s: s}
}

// next moves to the next member, leaving its raw key in m.key and the
// scanner at its value, which the caller must consume (read or skip). It
// returns false after the closing brace or on error.
func (m *members) next() bool {
	s := m.s
	if m.n < 0 || s.bad {
		return false
	}
	switch c := s.peek(); {
	case c == '}':
		s.pos++
		m.n = -1
		return false
	case m.n > 0 && c != ',':
		s.fail()
		return false
	case m.n > 0:
		s.pos++
	}
	m.key = s.memberKey()
	m.n++
	return !s.bad
}

// find moves to the next member named name, skipping the others, and
// leaves the scanner at its value, which the caller must consume. A name
// given twice is found twice.
func (m *members) find(name string) bool {
	for m.next() {
		if string(m.key) == name {
			return true
		}
		m.s.skip()
	}
	return false
}

// elements iterates over an array's elements; see scanner.array.
type elements struct {
	s *scanner
	n int
}

// array starts reading the value at pos as an array. A value of any other
// shape is skipped and yields no elements.
func (s *scanner) array() elements {
	if s.peek() != '[' {
		s.skip()
		return elements{s: s, n: -1}
	}
	s.pos++
	return elements{s: s}
}

// next moves to the next element, leaving the scanner at it; the caller
// must consume it. It returns false after the closing bracket or on error.
func (e *elements) next() bool {
	s := e.s
	if e.n < 0 || s.bad {
		return false
	}
	switch c := s.peek(); {
	case c == ']':
		s.pos++
		e.n = -1
		return false
	case e.n > 0 && c != ',':
		s.fail()
		return false
	case e.n > 0:
		s.pos++
	}
	e.n++
	return !s.bad
}

// str consumes the value at pos and returns its raw contents if it is a
// string.
func (s *scanner) str() ([]byte, bool) {
	if s.peek() != '"' {
		s.skip()
		return nil, false
	}
	v := s.rawString()
	return v, !s.bad
}

// isTrue consumes the value at pos and reports whether it is the literal true
// (not the string "true", not 1).
func (s *scanner) isTrue() bool {
	if s.peek() != 't' {
		s.skip()
		return false
	}
	s.literal("true")
	return !s.bad
}

// present consumes the value at pos and reports whether it is anything but
// null: an explicit null is how clients spell "not set".
func (s *scanner) present() bool {
	if s.peek() == 'n' {
		s.literal("null")
		return false
	}
	s.skip()
	return !s.bad
}

// moreThanOne consumes the value at pos and reports whether it is a number
// greater than 1.
func (s *scanner) moreThanOne() bool {
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		s.skip()
		return false
	}
	tok := s.number()
	if s.bad {
		return false
	}
	// The token is grammar-checked, so parsing can only overflow, and an
	// overflow to +Inf is still more than one.
	v, _ := strconv.ParseFloat(string(tok), 64)
	return v > 1
}
