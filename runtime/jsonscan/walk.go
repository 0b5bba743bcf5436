package jsonscan

// Members iterates over an object's members; see Scanner.Object.
type Members struct {
	s   *Scanner
	n   int // members read so far, or -1 once the object is done
	key []byte
}

// Object starts reading the value at pos as an object. A value of another
// kind is skipped and yields no members: a reader does not guess at shapes
// it does not expect. A caller that must tell the two apart asks Kind first.
func (s *Scanner) Object() Members {
	if !s.at(Object) {
		return Members{s: s, n: -1}
	}
	s.pos++
	return Members{s: s}
}

// Next moves to the next member and leaves the scanner at its value, which
// the caller must consume with one read. It returns false after the closing
// brace or on error.
func (m *Members) Next() bool {
	if !m.s.step(&m.n, '}') {
		return false
	}
	m.key = m.s.memberKey()
	return m.s.err == nil
}

// Key returns the current member's key raw, as RawString would; compare it
// with string(key) == "name" when escaped spellings need not match, or with
// Equal when they must.
func (m *Members) Key() []byte { return m.key }

// Find moves to the next member whose raw key is name, skipping the others,
// and leaves the scanner at its value, which the caller must consume. A name
// given twice is found twice.
func (m *Members) Find(name string) bool {
	for m.Next() {
		if string(m.key) == name {
			return true
		}
		m.s.Skip()
	}
	return false
}

// Elements iterates over an array's elements; see Scanner.Array.
type Elements struct {
	s *Scanner
	n int // elements read so far, or -1 once the array is done
}

// Array starts reading the value at pos as an array. A value of another kind
// is skipped and yields no elements.
func (s *Scanner) Array() Elements {
	if !s.at(Array) {
		return Elements{s: s, n: -1}
	}
	s.pos++
	return Elements{s: s}
}

// Next moves to the next element and leaves the scanner at it; the caller
// must consume it with one read. It returns false after the closing bracket
// or on error.
func (e *Elements) Next() bool { return e.s.step(&e.n, ']') }

// step moves to the next item of the container whose closer is given, n
// counting the items read so far: past the closer (and n set to -1, so the
// iterator stays done) or past the comma before another item.
func (s *Scanner) step(n *int, closer byte) bool {
	if *n < 0 || s.err != nil {
		return false
	}
	switch c := s.peek(); {
	case c == closer:
		s.pos++
		*n = -1
		return false
	case *n > 0 && c != ',':
		s.fail(ErrSyntax)
		return false
	case *n > 0:
		s.pos++
		s.ws()
	}
	*n++
	return true
}
