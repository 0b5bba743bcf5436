package jsonscan

import "math"

// Number consumes the value at pos and, if it is a number, returns its
// literal, grammar-checked. A value of another kind is skipped.
func (s *Scanner) Number() ([]byte, bool) {
	if !s.at(Number) {
		return nil, false
	}
	tok := s.number()
	return tok, s.err == nil
}

// Uint consumes the value at pos and returns it if it is a number written as
// a non-negative integer that fits in a uint64: exactly, never through a
// float, so a count read is never one the input does not hold. A negative
// number (-0 included), a fraction or exponent (1.0, 1e3), a number too large
// and a value of another kind are consumed and refused.
func (s *Scanner) Uint() (uint64, bool) {
	tok, ok := s.Number()
	if !ok || tok[0] == '-' {
		return 0, false
	}
	var v uint64
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// number consumes a number token at pos, checking the JSON grammar
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
// and that no byte that could continue a number follows it, so 01 and 1.2.3
// fail here rather than read as 0 and 1.2.
func (s *Scanner) number() []byte {
	start := s.pos
	s.optional('-')
	switch {
	case s.optional('0'):
	case !s.digits():
		s.fail(ErrSyntax)
		return nil
	}
	if s.optional('.') && !s.digits() {
		s.fail(ErrSyntax)
		return nil
	}
	if s.optional('e') || s.optional('E') {
		if !s.optional('+') {
			s.optional('-')
		}
		if !s.digits() {
			s.fail(ErrSyntax)
			return nil
		}
	}
	if s.pos < len(s.buf) && numberByte[s.buf[s.pos]] {
		s.fail(ErrSyntax)
		return nil
	}
	return s.buf[start:s.pos]
}

// numberByte holds the bytes a number token can contain.
var numberByte = [256]bool{'0': true, '1': true, '2': true, '3': true, '4': true,
	'5': true, '6': true, '7': true, '8': true, '9': true,
	'-': true, '+': true, '.': true, 'e': true, 'E': true}

// optional consumes byte c at pos if it is there.
func (s *Scanner) optional(c byte) bool {
	if s.pos < len(s.buf) && s.buf[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// digits consumes one or more decimal digits and reports whether there was one.
func (s *Scanner) digits() bool {
	start := s.pos
	for s.pos < len(s.buf) && s.buf[s.pos] >= '0' && s.buf[s.pos] <= '9' {
		s.pos++
	}
	return s.pos > start
}
