package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestIndexQuote(t *testing.T) {
	for _, in := range []string{``, `"`, `abc`, `ab"c`, strings.Repeat("x", 15) + `"`, strings.Repeat("x", 16) + `"`, strings.Repeat("x", 40) + `"x"`, strings.Repeat("x", 40)} {
		if got, want := IndexQuote([]byte(in)), strings.IndexByte(in, '"'); got != want {
			t.Errorf("IndexQuote(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestPlainRun puts every byte value at every offset of a run long enough
// for the word-at-a-time loop, the byte loop after it, and a second byte
// after the first (which must not be found first through a borrow).
func TestPlainRun(t *testing.T) {
	for c := 0; c < 256; c++ {
		stops := c == '"' || c == '\\' || c < 0x20
		for at := 0; at < 40; at++ {
			b := bytes.Repeat([]byte{'a'}, 40)
			b[at] = byte(c)
			want := len(b)
			if stops {
				want = at
			}
			if got := plainRun(b); got != want {
				t.Fatalf("plainRun with %#x at %d = %d, want %d", c, at, got, want)
			}
			if at+1 < len(b) {
				b[at+1] = '"'
				if got := plainRun(b); got != min(want, at+1) {
					t.Fatalf("plainRun with %#x at %d, quote after = %d", c, at, got)
				}
			}
		}
	}
}

func TestValidScannerTrustsStrings(t *testing.T) {
	for _, in := range []string{"\"tab\there\"", `"\x"`, `"\u12"`} {
		s := New([]byte(in))
		s.Skip()
		if !s.Bad() {
			t.Errorf("New accepts %q", in)
		}
		v := NewValid([]byte(in))
		v.Skip()
		if v.End(); v.Bad() {
			t.Errorf("NewValid refuses %q: it should only delimit strings", in)
		}
	}
	// Structure is still checked, and an unterminated string found.
	for _, in := range []string{`[1,]`, `{"a" 1}`, `"abc`, `"a\"`, `01`} {
		v := NewValid([]byte(in))
		v.Skip()
		if v.End(); !v.Bad() {
			t.Errorf("NewValid accepts %q", in)
		}
	}
}

func TestUnquote(t *testing.T) {
	cases := []struct{ raw, want string }{
		{``, ``},
		{`plain`, `plain`},
		{`ünï 東京`, `ünï 東京`},
		{`a\"b\\c\/d`, `a"b\c/d`},
		{`\b\f\n\r\t`, "\b\f\n\r\t"},
		{`\u00e9\u00E9`, `éé`},
		{`\u0000`, "\x00"},
		{`\uD83D\uDE00`, "😀"},
		{`\uD83D`, "\uFFFD"},
		{`\uDE00\uD83D`, "\uFFFD\uFFFD"},
		{`\uD83Dx`, "\uFFFDx"},
		{`\uD83D\u0041`, "\uFFFDA"},
		{"\x91", "\uFFFD"},
		{"a\xed\xa0\x80b", "a\uFFFD\uFFFD\uFFFDb"},
	}
	var buf [64]byte
	for _, tc := range cases {
		got, ok := Unquote(buf[:0], []byte(tc.raw))
		if !ok || string(got) != tc.want {
			t.Errorf("Unquote(%q) = %q, %v, want %q", tc.raw, got, ok, tc.want)
		}
		var std string
		if err := json.Unmarshal([]byte(`"`+tc.raw+`"`), &std); err != nil || std != tc.want {
			t.Errorf("encoding/json decodes %q as %q (%v): the case is wrong", tc.raw, std, err)
		}
		if !Equal([]byte(tc.raw), tc.want) || Equal([]byte(tc.raw), tc.want+"x") {
			t.Errorf("Equal(%q, %q) disagrees with Unquote", tc.raw, tc.want)
		}
	}
	raw := []byte("nothing to decode")
	if got, _ := Unquote(buf[:0], raw); &got[0] != &raw[0] {
		t.Errorf("Unquote copied contents that needed no decoding")
	}
	for _, bad := range []string{`\`, `\x`, `\u12`, "a\x01", `a"b`} {
		if got, ok := Unquote(nil, []byte(bad)); ok {
			t.Errorf("Unquote(%q) = %q, want a refusal", bad, got)
		}
	}
}

func TestEqual(t *testing.T) {
	cases := []struct {
		raw, lit string
		want     bool
	}{
		{`model`, "model", true},
		{`mod\u0065l`, "model", true},
		{`\u006d\u006F\u0064\u0065\u006c`, "model", true},
		{`model`, "mode", false},
		{`mode`, "model", false},
		{`mod\u0065l`, `mod\u0065l`, false},
		{`a\"b`, `a"b`, true},
		{`a\"b`, `a\"b`, false},
		{`caf\u00e9`, "café", true},
		{"\x91", "\uFFFD", true},
		{`\x`, `\x`, false},
		{``, "", true},
	}
	for _, tc := range cases {
		if got := Equal([]byte(tc.raw), tc.lit); got != tc.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", tc.raw, tc.lit, got, tc.want)
		}
	}
}
