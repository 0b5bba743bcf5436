package jsonscan

// Skip consumes one value of any kind, checking its grammar: containers to
// their closer, at most MaxDepth deep, without recursion.
func (s *Scanner) Skip() {
	if c := s.peek(); c != '{' && c != '[' {
		s.scalar()
		return
	}
	s.skipContainer()
}

// scalar consumes a string, number or literal at pos.
func (s *Scanner) scalar() {
	switch s.Kind() {
	case String:
		s.str()
	case Number:
		s.number()
	case True:
		s.literal("true")
	case False:
		s.literal("false")
	case Null:
		s.literal("null")
	default:
		s.fail(ErrSyntax)
	}
}

// literal consumes word (true, false or null) at pos.
func (s *Scanner) literal(word string) {
	if len(s.buf)-s.pos < len(word) || string(s.buf[s.pos:s.pos+len(word)]) != word {
		s.fail(ErrSyntax)
		return
	}
	s.pos += len(word)
}

// memberKey consumes an object key and the colon after it, and stops at the
// member's value.
func (s *Scanner) memberKey() []byte {
	s.ws()
	key := s.str()
	s.expect(':')
	s.ws()
	return key
}

// containers records, one bit per level, whether each open container in
// skipContainer is an object (1) or an array (0), so closers are checked
// without recursion or allocation.
type containers struct {
	bits  [MaxDepth / 64]uint64
	depth int
}

func (c *containers) push(object bool) bool {
	if c.depth == MaxDepth {
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

// skipContainer consumes an object or array. It is iterative, so hostile
// nesting costs a bounded stack.
func (s *Scanner) skipContainer() {
	var open containers
	for s.err == nil {
		switch c := s.peek(); c {
		case '{', '[':
			s.pos++
			if !open.push(c == '{') {
				s.fail(ErrDepth)
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

// closeAfterValue handles what follows a value inside skipContainer: it
// closes finished containers and reports whether another value follows
// (after a comma, and the key when inside an object).
func (s *Scanner) closeAfterValue(open *containers) bool {
	for s.err == nil && open.depth > 0 {
		obj := open.inObject()
		switch c := s.peek(); {
		case c == ',':
			s.pos++
			if obj {
				s.memberKey()
			}
			return s.err == nil
		case c == '}' && obj, c == ']' && !obj:
			s.pos++
			open.depth--
		default:
			s.fail(ErrSyntax)
		}
	}
	return false
}
