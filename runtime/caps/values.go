package caps

import (
	"strconv"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// The value predicates below consume the value at pos whatever its kind, as
// every jsonscan read does, and answer the one question a check asks of it.

// isTrue reports whether the value is the literal true (not the string
// "true", not 1).
func isTrue(s *jsonscan.Scanner) bool {
	k := s.Kind()
	s.Skip()
	return k == jsonscan.True && !s.Bad()
}

// present reports whether the value is anything but null: an explicit null
// is how clients spell "not set".
func present(s *jsonscan.Scanner) bool {
	k := s.Kind()
	s.Skip()
	return k != jsonscan.Null && !s.Bad()
}

// moreThanOne reports whether the value is a number greater than 1. It
// parses a float rather than using jsonscan's Uint: 2.0 and 1e1 ask for
// several choices as plainly as 2 does.
func moreThanOne(s *jsonscan.Scanner) bool {
	tok, ok := s.Number()
	if !ok {
		return false
	}
	// The token is grammar-checked, so parsing can only overflow, and an
	// overflow to +Inf is still more than one.
	v, _ := strconv.ParseFloat(string(tok), 64)
	return v > 1
}
