package meter

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNullUsage(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"c","choices":[{"delta":{"content":"Hi"}}],"usage":null}`: `{"id":"c","choices":[{"delta":{"content":"Hi"}}]}`,
		`{"id":"c","choices":[],"usage":null}` + "\r\n":                  `{"id":"c","choices":[]}` + "\r\n",
		`{"a":{"b":1},"usage":null}`:                                     `{"a":{"b":1}}`,
		`{"usage":null,"id":"c"}`:                                        `{"id":"c"}`,
		`{ "id" : "c" , "usage" : null }`:                                `{ "id" : "c" }`,
		`{"usage":null}`:                                                 `{}`,
		`{"id":"c","usage":{"prompt_tokens":1}}`:                         "",
		`{"id":"c","x":{"usage":null}}`:                                  "",
		`{"id":"c","content":"\",\"usage\":null"}`:                       "",
		`{"usage":null,"usage":null}`:                                    "",
		`[DONE]`:                                                         "",
		`{"id":"c","usage":null`:                                         "",
	} {
		var m StreamMeter
		m.Event([]byte(in))
		start, end, ok := m.NullUsage()
		if want == "" {
			if ok {
				t.Errorf("%s: cut %q, want nothing", in, in[start:end])
			}
			continue
		}
		if !ok {
			t.Errorf("%s: not found", in)
			continue
		}
		got := in[:start] + in[end:]
		if got != want || !json.Valid([]byte(got)) {
			t.Errorf("%s: cut to %s, want %s", in, got, want)
		}
	}
}

// FuzzNullUsage: what StreamMeter.NullUsage cuts is a "usage":null member with one
// comma, and what it leaves of a valid object is a valid object.
func FuzzNullUsage(f *testing.F) {
	for _, s := range []string{`{"id":"c","usage":null}`, `{"usage":null,"id":"c"}`, `{"usage":null}`, `{ "a" : 1 , "usage" : null }`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m StreamMeter
		m.Event(data)
		start, end, ok := m.NullUsage()
		if !ok {
			return
		}
		if start < 0 || end > len(data) || start >= end {
			t.Fatalf("span %d..%d of %d", start, end, len(data))
		}
		cut := string(data[start:end])
		if !strings.Contains(cut, `"usage"`) || !strings.Contains(cut, "null") || strings.Count(cut, ",") > 1 {
			t.Fatalf("cut %q", cut)
		}
		rest := append(append([]byte{}, data[:start]...), data[end:]...)
		if json.Valid(data) && !json.Valid(rest) {
			t.Fatalf("%s cut to %s", data, rest)
		}
	})
}
