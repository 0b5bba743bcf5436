package jsonrpc

import (
	"strings"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// members are the members of a message the gateway reads.
var members = [...]string{"jsonrpc", "id", "method", "params"}

// member is the name of a message's member as the service's decoder may
// read it: one of members in any letter case or escaping (Go's
// encoding/json matches a field's name case-insensitively and keeps the
// last of several), with its bit in a set of them; "" and 0 for any
// other. A message naming one twice is refused: which of the two the
// service acts on is its decoder's choice, and the gateway would charge
// and settle by the other ({"method":"tasks/cancel","Method":"message/send"},
// or an id the answer's does not match).
func member(raw []byte) (string, uint8) {
	k, ok := jsonscan.Unquote(nil, raw)
	if !ok {
		return "", 0
	}
	for i, name := range members {
		if strings.EqualFold(string(k), name) {
			return name, 1 << i
		}
	}
	return "", 0
}
