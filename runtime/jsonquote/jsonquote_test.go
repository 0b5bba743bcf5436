package jsonquote

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAppend: what Append writes decodes to the string it was given (or
// its valid-UTF-8 reading), and escapes only what must be or what slog's
// handler escapes.
func TestAppend(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{"", `""`},
		{"q\"b\\n\nr\rt\t\x01\x1f\x7f", `"q\"b\\n\nr\rt\t\u0001\u001f` + "\x7f" + `"`},
		{"<&>", `"<&>"`},
		{"é€😀\ufffd", `"é€😀` + "\ufffd" + `"`},
		{"a\xffb\xfe", `"a\ufffdb\ufffd"`},
		{"\u2028x\u2029", `"\u2028x\u2029"`},
	} {
		got := Append([]byte("prefix"), c.in)
		if !bytes.HasPrefix(got, []byte("prefix")) || string(got[len("prefix"):]) != c.want {
			t.Errorf("Append(%q) = %s, want %s", c.in, got, c.want)
			continue
		}
		var back string
		if err := json.Unmarshal(got[len("prefix"):], &back); err != nil {
			t.Errorf("Append(%q) is not JSON: %v", c.in, err)
		} else if back != strings.ToValidUTF8(c.in, "\ufffd") {
			t.Errorf("Append(%q) decodes to %q", c.in, back)
		}
	}
}
