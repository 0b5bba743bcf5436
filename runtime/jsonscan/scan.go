// Package jsonscan reads JSON in place: a forward-only scanner over a byte
// slice that hands back keys, strings and numbers as slices of the input and
// skips, grammar-checked, every value its caller does not want. It is what
// the gateway uses wherever it reads a body it forwards rather than decodes
// (the requested model, the capabilities a request uses, the usage a
// response reports), so it never builds values and never allocates.
//
// A reader walks the document the way it is laid out: Object and Array
// iterate members and elements, and every member value or element must be
// consumed by exactly one read (Skip, RawString, Number, Uint, or a nested
// Object or Array). Each read consumes its value whatever its shape, so a
// reader that meets a shape it does not expect stays in step and simply
// reads nothing there.
//
// Each read checks the grammar of what it consumes, as json.Valid does,
// except that a scanner made by NewValid trusts string contents.
//
// Errors are sticky: the first syntax error (or nesting deeper than
// MaxDepth) is kept, the scanner moves to the end of its input, and every
// later read returns at once and every iteration stops. A reader checks Bad
// or Err once, at the end. No input, however malformed, makes a read step
// outside the slice.
package jsonscan

import "errors"

// MaxDepth bounds how deeply nested a value Skip walks. Request and response
// bodies nest a few dozen levels at most (a JSON schema inside a tool);
// anything deeper is refused rather than walked.
const MaxDepth = 1024

// Errors Err reports.
var (
	ErrSyntax = errors.New("jsonscan: malformed JSON")
	ErrDepth  = errors.New("jsonscan: JSON nested deeper than jsonscan.MaxDepth")
)

// Kind is the kind of a JSON value, as its first byte announces it.
type Kind uint8

// The kinds of value. Invalid is what Kind reports at the end of the input,
// after an error, or at a byte no value starts with.
const (
	Invalid Kind = iota
	Object
	Array
	String
	Number
	True
	False
	Null
)

var kindNames = [...]string{"invalid", "object", "array", "string", "number", "true", "false", "null"}

// String returns the kind's name: object, array, ..., or invalid.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// kindOf maps a value's first byte to its kind.
var kindOf = func() (t [256]Kind) {
	t['{'], t['['], t['"'] = Object, Array, String
	t['t'], t['f'], t['n'] = True, False, Null
	t['-'] = Number
	for c := '0'; c <= '9'; c++ {
		t[c] = Number
	}
	return t
}()

// Scanner reads one JSON text. The zero value reads an empty input; New
// and NewValid start it on a slice, which must not change while it is read.
type Scanner struct {
	buf   []byte
	pos   int
	err   error
	valid bool // the input passed json.Valid: delimit strings, do not check them
}

// New returns a scanner at the start of b that checks everything it reads
// as json.Valid would.
func New(b []byte) Scanner { return Scanner{buf: b} }

// NewValid returns a scanner at the start of b, which the caller has
// already checked with json.Valid (the gateway checks every request body as
// it arrives). It does not check string contents again, only finds where
// each string ends, which skips long text at IndexByte speed rather than
// looking at every byte. Structure, numbers and literals are still checked,
// and on input json.Valid would refuse it still stays in bounds and stops
// at a structural error; it may accept a string holding a control byte or a
// malformed escape.
func NewValid(b []byte) Scanner { return Scanner{buf: b, valid: true} }

// Err returns the first error the scanner met, or nil.
func (s *Scanner) Err() error { return s.err }

// Bad reports whether the scanner has met an error.
func (s *Scanner) Bad() bool { return s.err != nil }

// Pos returns the offset of the next unread byte. Reads consume exactly
// their value, and Kind and the iterators' Next stop at the first byte of the
// next value, so Pos before and after a read delimits that value in the
// input. After an error Pos is the input's length.
func (s *Scanner) Pos() int { return s.pos }

// Kind skips whitespace and reports the kind of the value that starts there,
// from its first byte alone; the read that consumes it checks the rest.
func (s *Scanner) Kind() Kind {
	c := s.peek() // 0 at the end and after an error, and kindOf[0] is Invalid
	return kindOf[c]
}

// at reports whether the value at pos is of kind k, and skips it if not:
// every typed read consumes a value of another kind and reads nothing.
func (s *Scanner) at(k Kind) bool {
	if s.Kind() == k {
		return true
	}
	s.Skip()
	return false
}

// End checks that nothing but whitespace follows the value just read; it is
// how a reader of a whole document refuses trailing bytes.
func (s *Scanner) End() {
	if s.peek() != 0 || s.pos != len(s.buf) {
		s.fail(ErrSyntax)
	}
}

// fail records err, unless an earlier error is already kept, and moves to
// the end so every later read stops.
func (s *Scanner) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.pos = len(s.buf)
}

// ws skips insignificant whitespace.
func (s *Scanner) ws() {
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
func (s *Scanner) peek() byte {
	s.ws()
	if s.pos < len(s.buf) {
		return s.buf[s.pos]
	}
	return 0
}

// expect consumes byte c after whitespace, failing if something else is there.
func (s *Scanner) expect(c byte) {
	if s.peek() != c {
		s.fail(ErrSyntax)
		return
	}
	s.pos++
}
