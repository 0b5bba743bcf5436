package caps

import "bytes"

// maxDepth bounds how deeply nested a value the scanner skips. Request bodies
// nest a few dozen levels at most (a JSON schema inside a tool); anything
// deeper is refused as malformed rather than walked.
const maxDepth = 1024

// scanner is a forward-only JSON reader over a request body. It never
// decodes: keys and strings come back as raw bytes between their quotes, and
// every value the caller does not want is skipped, grammar-checked, in place.
//
// Errors are sticky: the first syntax error sets bad and moves pos to the end,
// so every later call returns at once and every loop over members or
// elements stops.
//
// String contents are delimited exactly (escaped quotes are honoured) but not
// validated: what a string says is the upstream's to parse, not ours.
type scanner struct {
	buf []byte
	pos int
	bad bool
}

func (s *scanner) fail() {
	s.bad = true
	s.pos = len(s.buf)
}

// ws skips insignificant whitespace.
func (s *scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos < len(s.buf) {
		return s.buf[s.pos]
	}
	return 0
}

// expect consumes byte c after whitespace, failing if something else is there.
func (s *scanner) expect(c byte) {
	if s.peek() != c {
		s.fail()
		return
	}
	s.pos++
}

// end checks that nothing but whitespace follows the top-level value.
func (s *scanner) end() {
	if s.peek() != 0 || s.pos != len(s.buf) {
		s.fail()
	}
}

// indexQuote is bytes.IndexByte(b, '"') with a short inline look first: in
// JSON structure the next quote is usually a few bytes away, nearer than the
// call to IndexByte pays off, while in prose it is far and IndexByte is fast.
func indexQuote(b []byte) int {
	near := min(len(b), 16)
	for i, c := range b[:near] {
		if c == '"' {
			return i
		}
	}
	if i := bytes.IndexByte(b[near:], '"'); i >= 0 {
		return near + i
	}
	return -1
}

// rawString consumes a string token at pos and returns its raw contents.
// The closing quote is the first one preceded by an even run of backslashes;
// counting runs back never crosses the previous quote, so the whole string
// costs time linear in its length.
func (s *scanner) rawString() []byte {
	if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
		s.fail()
		return nil
	}
	start := s.pos + 1
	for from := start; ; {
		i := indexQuote(s.buf[from:])
		if i < 0 {
			s.fail()
			return nil
		}
		q := from + i
		k := q
		for k > from && s.buf[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			s.pos = q + 1
			return s.buf[start:q]
		}
		from = q + 1
	}
}

// literal consumes word (true, false or null) at pos.
func (s *scanner) literal(word string) {
	if len(s.buf)-s.pos < len(word) || string(s.buf[s.pos:s.pos+len(word)]) != word {
		s.fail()
		return
	}
	s.pos += len(word)
}

// number consumes a number token at pos, checking the JSON grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (s *scanner) number() []byte {
	start := s.pos
	if s.pos < len(s.buf) && s.buf[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.buf) && s.buf[s.pos] == '0':
		s.pos++
	case !s.digits():
		s.fail()
		return nil
	}
	if s.pos < len(s.buf) && s.buf[s.pos] == '.' {
		s.pos++
		if !s.digits() {
			s.fail()
			return nil
		}
	}
	if s.pos < len(s.buf) && (s.buf[s.pos] == 'e' || s.buf[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.buf) && (s.buf[s.pos] == '+' || s.buf[s.pos] == '-') {
			s.pos++
		}
		if !s.digits() {
			s.fail()
			return nil
		}
	}
	return s.buf[start:s.pos]
}

// digits consumes one or more decimal digits and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.pos
	for s.pos < len(s.buf) && s.buf[s.pos] >= '0' && s.buf[s.pos] <= '9' {
		s.pos++
	}
	return s.pos > start
}

// scalar consumes a string, number or literal at pos.
func (s *scanner) scalar() {
	if s.pos >= len(s.buf) {
		s.fail()
		return
	}
	switch c := s.buf[s.pos]; {
	case c == '"':
		s.rawString()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	default:
		s.fail()
	}
}

// memberKey consumes an object key and the colon after it.
func (s *scanner) memberKey() []byte {
	s.ws()
	key := s.rawString()
	s.expect(':')
	return key
}

// containers records, one bit per level, whether each open container in
// skip is an object (1) or an array (0), so closers are checked without
// recursion or allocation.
type containers struct {
	bits  [maxDepth / 64]uint64
	depth int
}

func (c *containers) push(object bool) bool {
	if c.depth == maxDepth {
		return false
	}
	word, bit := c.depth/64, uint(c.depth%64)
	if object {
		c.bits[word] |= 1 << bit
	} else {
		c.bits[word] &^= 1 << bit
	}
	c.depth++
	return true
}

func (c *containers) inObject() bool {
	d := c.depth - 1
	return c.bits[d/64]>>uint(d%64)&1 == 1
}

// skip consumes one value of any shape, checking its grammar.
func (s *scanner) skip() {
	if c := s.peek(); c != '{' && c != '[' {
		s.scalar()
		return
	}
	s.skipContainer()
}

// skipContainer consumes an object or array. It is iterative, so hostile
// nesting costs a bounded stack.
func (s *scanner) skipContainer() {
	var open containers
	for !s.bad {
		switch c := s.peek(); c {
		case '{', '[':
			s.pos++
			if !open.push(c == '{') {
				s.fail()
				return
			}
			if s.peek() != c+2 { // '{'+2 == '}', '['+2 == ']'
				if c == '{' {
					s.memberKey()
				}
				continue
			}
			s.pos++
			open.depth--
		default:
			s.scalar()
		}
		if !s.closeAfterValue(&open) {
			return
		}
	}
}

// closeAfterValue handles what follows a value inside skip: it closes
// finished containers and reports whether another value follows (after a
// comma, and the key when inside an object).
func (s *scanner) closeAfterValue(open *containers) bool {
	for !s.bad && open.depth > 0 {
		obj := open.inObject()
		switch c := s.peek(); {
		case c == ',':
			s.pos++
			if obj {
				s.memberKey()
			}
			return !s.bad
		case c == '}' && obj, c == ']' && !obj:
			s.pos++
			open.depth--
		default:
			s.fail()
		}
	}
	return false
}
