package meter

import (
	"encoding/json"
	"testing"
)

func TestNullUsage(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"c","choices":[{"delta":{"content":"Hi"}}],"usage":null}`: `{"id":"c","choices":[{"delta":{"content":"Hi"}}]}`,
		`{"usage":null,"id":"c"}`:                  `{"id":"c"}`,
		`{ "id" : "c" , "usage" : null }`:          `{ "id" : "c" }`,
		`{"usage":null}`:                           `{}`,
		`{"id":"c","usage":{"prompt_tokens":1}}`:   "",
		`{"id":"c","x":{"usage":null}}`:            "",
		`{"id":"c","content":"\",\"usage\":null"}`: "",
		`{"usage":null,"usage":null}`:              "",
		`[DONE]`:                                   "",
		`{"id":"c","usage":null`:                   "",
	} {
		start, end, ok := NullUsage([]byte(in))
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
