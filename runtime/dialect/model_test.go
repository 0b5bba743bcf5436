package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/pistra/pistra/runtime/jsonquote"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/jsonscan"
)

func TestFindModel(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
		err  error
	}{
		{"first key", `{"model":"gpt-4o","messages":[]}`, "gpt-4o", nil},
		{"after nested values", `{"messages":[{"role":"user","content":"{\"model\":\"x\"}"}],"n":1,"stream":true,"x":null, "model" : "fast" }`, "fast", nil},
		{"nested model ignored", `{"metadata":{"model":"inner"},"model":"outer"}`, "outer", nil},
		{"escaped key", `{"mod\u0065l":"m1"}`, "m1", nil},
		{"escaped value", `{"model":"a\"b\\c\u00e9"}`, "a\"b\\cé", nil},
		{"invalid utf-8 decoded as encoding/json does", "{\"model\":\"\x91\"}", "\uFFFD", nil},
		{"number values", `{"t":-1.5e3,"model":"m","k":true}`, "m", nil},
		{"missing", `{"messages":[]}`, "", ErrNoModel},
		{"empty object", `{}`, "", ErrNoModel},
		{"not a string", `{"model":42}`, "", ErrModelNotString},
		{"null model", `{"model":null}`, "", ErrModelNotString},
		{"duplicate", `{"model":"a","model":"b"}`, "", ErrDuplicateModel},
		{"duplicate spelled with escapes", `{"model":"a","mod\u0065l":"b"}`, "", ErrDuplicateModel},
		{"duplicate after a bad value", `{"model":"a","model":`, "", ErrNotObject},
		{"bad escape in the name", `{"model":"a\qb"}`, "", ErrModelNotString},
		{"trailing bytes", `{"model":"a"} x`, "", ErrNotObject},
		{"deeper than jsonscan.MaxDepth", `{"model":"a","x":` + strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1) + `}`, "", ErrNotObject},
		{"array body", `[{"model":"a"}]`, "", ErrNotObject},
		{"string body", `"model"`, "", ErrNotObject},
		{"truncated", `{"model":"a"`, "", ErrNotObject},
		{"empty", ``, "", ErrNotObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := FindModel([]byte(tt.body))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && f.Name != tt.want {
				t.Fatalf("name = %q, want %q", f.Name, tt.want)
			}
			if err != nil && f != (ModelField{}) {
				t.Fatalf("field %+v returned with %v", f, err)
			}
		})
	}
}

func TestAppendRequestEditsOnlyTheModelValue(t *testing.T) {
	body := []byte(`{ "stream" : true , "model" : "fast" , "messages":[{"content":"model"}]}`)
	h, err := ReadHead(body)
	if err != nil {
		t.Fatal(err)
	}
	if f := h.Model; string(body[f.Start:f.End]) != `"fast"` {
		t.Fatalf("Start..End = %q, want the value, quotes included", body[f.Start:f.End])
	}
	got := string(AppendRequest(nil, body, &h, `gpt-4o-mini"x`, false))
	want := `{ "stream" : true , "model" : "gpt-4o-mini\"x" , "messages":[{"content":"model"}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestAppendStringIsJSON: the model a rewrite writes (jsonquote.Append)
// reads back as the same name.
func TestAppendStringIsJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\"back\\slash", "ctl\x00\x1f\n", "ünï"} {
		var back string
		if err := json.Unmarshal(jsonquote.Append(nil, s), &back); err != nil || back != s {
			t.Errorf("jsonquote.Append(%q) round-trips to %q, %v", s, back, err)
		}
	}
}

// FuzzFindModel checks the scanner against encoding/json on valid bodies
// (every object scans as one; a name read is the one encoding/json reads;
// a rewritten body, asking for usage where it can, is still an object
// encoding/json reads the new model and include_usage from) and that it
// never panics on anything.
func FuzzFindModel(f *testing.F) {
	for _, s := range []string{`{"model":"a"}`, `{"a":[1,{"model":"x"}],"model":"b\n"}`, `{"model":1}`, `[]`, `{"m":"\\"}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHead(b)
		mf := h.Model
		if !json.Valid(b) {
			return
		}
		var obj map[string]json.RawMessage
		shallow := bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) <= jsonscan.MaxDepth
		if errors.Is(err, ErrNotObject) && shallow && json.Unmarshal(b, &obj) == nil && obj != nil {
			t.Fatalf("a valid object is refused as not one: %s", b)
		}
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			t.Fatalf("valid JSON with a model did not decode as an object: %s", b)
		}
		var name string
		if json.Unmarshal(m["model"], &name) != nil || name != mf.Name {
			t.Fatalf("scanner read %q, encoding/json %s", mf.Name, m["model"])
		}
		ask := h.Stream.CanAskUsage()
		out := AppendRequest(nil, b, &h, "swapped", ask)
		var m2 map[string]json.RawMessage
		if json.Unmarshal(out, &m2) != nil || string(m2["model"]) != `"swapped"` {
			t.Fatalf("rewrite broke the body: %s", out)
		}
		var opts struct {
			IncludeUsage json.RawMessage `json:"include_usage"`
		}
		if ask && (json.Unmarshal(m2["stream_options"], &opts) != nil || string(opts.IncludeUsage) != "true") {
			t.Fatalf("asking for usage did not ask: %s", out)
		}
	})
}
