// Package jsonquote writes JSON strings by appending to a byte slice, for
// the places that write JSON without encoding/json's reflection: the
// request log line, the test upstream. It quotes as log/slog's JSON
// handler does, so a line written either way is the same bytes: <, > and
// & stay literal, invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029 are
// escaped.
package jsonquote

import "unicode/utf8"

// Append appends s as a JSON string literal.
func Append(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendEscaped(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			if size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, `\u202`...)
				b = append(b, hexDigits[r&0xF])
			}
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendEscaped escapes an ASCII byte JSON does not take as it is.
func appendEscaped(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}
