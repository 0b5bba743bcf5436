package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// RawString consumes the value at pos and, if it is a string, returns its
// contents raw, between the quotes and with escapes as written; Unquote
// decodes them and Equal compares them. A value of another kind is skipped.
func (s *Scanner) RawString() ([]byte, bool) {
	if !s.at(String) {
		return nil, false
	}
	v := s.str()
	return v, s.err == nil
}

// str consumes a string token at pos and returns its raw contents.
func (s *Scanner) str() []byte {
	if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
		s.fail(ErrSyntax)
		return nil
	}
	if s.valid {
		return s.delimit()
	}
	return s.check()
}

// check consumes a string checking what encoding/json's json.Valid checks:
// every escape is one JSON defines and no byte is a raw control character.
// It does not check UTF-8, which json.Valid does not either; Unquote
// replaces invalid bytes as encoding/json does.
func (s *Scanner) check() []byte {
	start := s.pos + 1
	for i := start; ; {
		i += plainRun(s.buf[i:])
		if i >= len(s.buf) {
			s.fail(ErrSyntax)
			return nil
		}
		switch s.buf[i] {
		case '"':
			s.pos = i + 1
			return s.buf[start:i]
		case '\\':
			_, n, ok := unescape(s.buf[i:])
			if !ok {
				s.fail(ErrSyntax)
				return nil
			}
			i += n
		default: // a control byte
			s.fail(ErrSyntax)
			return nil
		}
	}
}

// delimit consumes a string that json.Valid has accepted, looking only for
// its end: the first quote preceded by an even run of backslashes. Counting
// runs back never crosses the previous quote, so the whole string costs
// time linear in its length, and IndexQuote's speed on long text.
func (s *Scanner) delimit() []byte {
	start := s.pos + 1
	for from := start; ; {
		i := IndexQuote(s.buf[from:])
		if i < 0 {
			s.fail(ErrSyntax)
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

// IndexQuote is bytes.IndexByte(b, '"') with a short inline look first: in
// JSON structure the next quote is usually a few bytes away, nearer than the
// call to IndexByte pays off, while in prose it is far and IndexByte is fast.
// It is exported for the byte prefilters that run before a scan.
func IndexQuote(b []byte) int {
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

// Word-at-a-time masks for plainRun: lsb has the low bit of every byte set,
// msb the high bit.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plainRun returns how many bytes b starts with that need no attention
// inside a string: anything but a quote, a backslash or a control byte. It
// tests sixteen bytes a step, since string contents are most of a body and
// the byte that ends a run is rare.
func plainRun(b []byte) int {
	i := 0
	for ; len(b)-i >= 16; i += 16 {
		w := b[i : i+16 : i+16]
		lo, hi := special(binary.LittleEndian.Uint64(w)), special(binary.LittleEndian.Uint64(w[8:]))
		if lo != 0 {
			return i + bits.TrailingZeros64(lo)/8
		}
		if hi != 0 {
			return i + 8 + bits.TrailingZeros64(hi)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// special returns a mask with the high bit set in the lowest byte of w (in
// memory order) that is a quote, a backslash or below 0x20. Higher bytes
// may be marked falsely, through a borrow out of a marked byte, but never a
// byte below the first true one, which is all plainRun reads.
//
// Flipping bit 1 maps the quote (0x22) to 0x20 and keeps control bytes below
// 0x20, so one "below 0x21" test finds both; a "zero byte" test after
// flipping the backslash's bits finds it.
func special(w uint64) uint64 {
	qc := w ^ (lsb * 0x02)
	bs := w ^ (lsb * '\\')
	return ((qc-lsb*0x21)&^qc | (bs-lsb)&^bs) & msb
}
