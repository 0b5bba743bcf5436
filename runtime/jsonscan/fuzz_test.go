package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// FuzzSkip checks Skip's grammar against encoding/json. A document
// json.Valid accepts must be skipped (nesting permitting), by New and
// NewValid alike and to the same end; one New accepts must be valid. One
// NewValid accepts must be valid wherever its trust in string contents
// cannot matter: escapes and control bytes are what it leaves unchecked.
func FuzzSkip(f *testing.F) {
	for _, seed := range []string{`{"a":[1,2.5e3,"x\"y",true,null,{}]}`, `[`, `"\\"`, `{"a":1,}`, `-0.0E-0`, ` [ [ ] ] `, "\"\t\"", `"\q"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, v := New(in), NewValid(in)
		s.Skip()
		s.End()
		v.Skip()
		v.End()
		valid := json.Valid(in)
		shallow := bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) <= MaxDepth
		if valid && shallow && (s.Bad() || v.Bad()) {
			t.Fatalf("json.Valid accepts %q, New (err %v) or NewValid (err %v) does not", in, s.Err(), v.Err())
		}
		if !s.Bad() && !valid {
			t.Fatalf("New accepts %q, json.Valid does not", in)
		}
		plain := !bytes.ContainsAny(in, "\\") && !hasControl(in)
		if !v.Bad() && plain && !valid {
			t.Fatalf("NewValid accepts %q, json.Valid does not", in)
		}
	})
}

// hasControl reports a byte below 0x20: raw inside a string, json.Valid
// refuses it and NewValid does not look.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// FuzzScan walks any input with the structured reads and checks each value
// read without error: its offsets are in bounds and ordered, its bytes are
// a document json.Valid accepts, a string decodes as encoding/json decodes
// it, a number reads as Uint exactly when strconv.ParseUint takes the
// literal, to the same value. On input json.Valid accepts, NewValid must
// read what New reads.
func FuzzScan(f *testing.F) {
	for _, seed := range []string{
		`{"usage":{"prompt_tokens":12,"completion_tokens":18446744073709551615,"total_tokens":1e3}}`,
		`[0,-0,1.5,"a\u00e9\ud83d\ude00",true,false,null,{"k\"":[]}]`,
		`{"model":"m","n":01}`, `18446744073709551616`, `"\uD800x"`, "[\"\x91\"]", ` {"a" : [ 1 , 2 ] } `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := New(in)
		var got []string
		walk(t, &s, in, 0, &got)
		s.End()
		if !s.Bad() && !json.Valid(in) {
			t.Fatalf("New reads %q whole, json.Valid refuses it", in)
		}
		if !json.Valid(in) {
			return
		}
		v := NewValid(in)
		var vgot []string
		walk(t, &v, in, 0, &vgot)
		v.End()
		if s.Bad() != v.Bad() || len(got) != len(vgot) {
			t.Fatalf("on valid %q New (err %v) and NewValid (err %v) differ", in, s.Err(), v.Err())
		}
		for i := range got {
			if got[i] != vgot[i] {
				t.Fatalf("on valid %q New read %q, NewValid %q", in, got[i], vgot[i])
			}
		}
	})
}

// walkDepth bounds the walk's own recursion; deeper values are skipped.
const walkDepth = 64

// walk reads the value at s with the read its kind calls for, appending
// what it read to got, and checks it as FuzzScan says.
func walk(t *testing.T, s *Scanner, in []byte, depth int, got *[]string) {
	k := s.Kind()
	start := s.Pos()
	switch {
	case k == Object && depth < walkDepth:
		for m := s.Object(); m.Next(); {
			*got = append(*got, "key:"+string(m.Key()))
			walk(t, s, in, depth+1, got)
		}
	case k == Array && depth < walkDepth:
		for e := s.Array(); e.Next(); {
			walk(t, s, in, depth+1, got)
		}
	case k == String:
		raw, ok := s.RawString()
		if ok {
			checkString(t, raw)
		}
	case k == Number:
		n, ok := s.Uint()
		if !s.Bad() {
			checkUint(t, in[start:s.Pos()], n, ok)
		}
	default:
		s.Skip()
	}
	end := s.Pos()
	if start < 0 || start > end || end > len(in) {
		t.Fatalf("%v value at %d..%d of %d bytes", k, start, end, len(in))
	}
	if s.Bad() {
		return
	}
	if !json.Valid(in[start:end]) {
		t.Fatalf("read %v %q at %d..%d, json.Valid refuses it", k, in[start:end], start, end)
	}
	*got = append(*got, string(in[start:end]))
}

func checkString(t *testing.T, raw []byte) {
	dec, ok := Unquote(nil, raw)
	var std string
	if err := json.Unmarshal([]byte(`"`+string(raw)+`"`), &std); err != nil || !ok || string(dec) != std {
		t.Fatalf("Unquote(%q) = %q, %v; encoding/json %q, %v", raw, dec, ok, std, err)
	}
	if !Equal(raw, std) {
		t.Fatalf("Equal(%q, %q) is false", raw, std)
	}
}

func checkUint(t *testing.T, lit []byte, n uint64, ok bool) {
	want, err := strconv.ParseUint(string(lit), 10, 64)
	if ok != (err == nil) || n != want && ok {
		t.Fatalf("Uint(%s) = %d, %v; strconv.ParseUint %d, %v", lit, n, ok, want, err)
	}
}
