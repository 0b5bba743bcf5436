package fakeprovider

import (
	"strconv"
	"unicode/utf8"
)

// The fake writes its responses by appending to byte slices instead of going
// through encoding/json: it is the baseline of the gateway's load benchmark,
// and per-chunk reflection would make that baseline slower than the upstreams
// it stands in for.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string literal. Like the real APIs it
// leaves <, > and & literal; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
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
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

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
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// appendStringOrNull appends s as a JSON string, or null when s is empty.
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

func appendInt(b []byte, n int) []byte {
	return strconv.AppendInt(b, int64(n), 10)
}
