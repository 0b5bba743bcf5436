package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes string contents as RawString returns them, exactly as
// encoding/json decodes a string: escapes resolved, a surrogate pair joined,
// a lone surrogate and each byte of invalid UTF-8 replaced by U+FFFD. When
// nothing needs decoding (the common case) it returns raw itself, no copy
// made; otherwise it appends the decoded text to dst and returns that. It
// reports false for contents no JSON string could hold.
func Unquote(dst, raw []byte) ([]byte, bool) {
	if plain(raw) {
		return raw, true
	}
	for len(raw) > 0 {
		r, n, ok := decodeRune(raw)
		if !ok {
			return dst, false
		}
		dst = utf8.AppendRune(dst, r)
		raw = raw[n:]
	}
	return dst, true
}

// Equal reports whether string contents raw decode to lit, without
// allocating: a key spelled with escapes ("mod\u0065l") equals the literal
// it spells.
func Equal(raw []byte, lit string) bool {
	if plain(raw) {
		return string(raw) == lit
	}
	var enc [utf8.UTFMax]byte
	for len(raw) > 0 {
		r, n, ok := decodeRune(raw)
		if !ok {
			return false
		}
		k := utf8.EncodeRune(enc[:], r)
		if len(lit) < k || lit[:k] != string(enc[:k]) {
			return false
		}
		raw, lit = raw[n:], lit[k:]
	}
	return lit == ""
}

// plain reports whether string contents decode to themselves: no escape, no
// control byte, valid UTF-8.
func plain(raw []byte) bool {
	return plainRun(raw) == len(raw) && utf8.Valid(raw)
}

// decodeRune decodes the character raw starts with, an escape or a UTF-8
// sequence, returning the rune encoding/json makes of it and its length.
func decodeRune(raw []byte) (rune, int, bool) {
	switch c := raw[0]; {
	case c == '\\':
		return unescape(raw)
	case c == '"' || c < 0x20:
		return 0, 0, false
	case c < utf8.RuneSelf:
		return rune(c), 1, true
	}
	r, n := utf8.DecodeRune(raw)
	return r, n, true
}

// escapes maps the byte after a backslash to the byte it stands for, for
// every escape but \u.
var escapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescape decodes the escape sequence b starts with and returns its length,
// or false if it is not one JSON defines. A \u high surrogate followed by a
// \u low one is one sequence of twelve bytes.
func unescape(b []byte) (rune, int, bool) {
	if len(b) < 2 {
		return 0, 0, false
	}
	if e := escapes[b[1]]; e != 0 {
		return rune(e), 2, true
	}
	if b[1] != 'u' {
		return 0, 0, false
	}
	r, ok := hex4(b[2:])
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		if lo, ok := hex4(b[8:]); ok {
			if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
				return pair, 12, true
			}
		}
	}
	return utf8.RuneError, 6, true
}

// hex4 decodes the four hex digits b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
