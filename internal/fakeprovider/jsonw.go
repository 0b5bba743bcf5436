package fakeprovider

import (
	"strconv"

	"github.com/pistra/pistra/runtime/jsonquote"
)

// The fake writes its responses by appending to byte slices instead of going
// through encoding/json: it is the baseline of the gateway's load benchmark,
// and per-chunk reflection would make that baseline slower than the upstreams
// it stands in for.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string literal. Like the real APIs it
// leaves <, > and & literal; invalid UTF-8 becomes U+FFFD.
var appendString = jsonquote.Append

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
