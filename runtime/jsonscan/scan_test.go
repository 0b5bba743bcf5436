package jsonscan

import (
	"errors"
	"strings"
	"testing"
)

// skipAll skips one value and checks nothing follows it.
func skipAll(in string) (s Scanner) {
	s = New([]byte(in))
	s.Skip()
	s.End()
	return s
}

func TestSkip(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{`0`, true}, {`-0`, true}, {`12.5e-3`, true}, {`1E+9`, true}, {`-1.0`, true},
		{`01`, false}, {`1.`, false}, {`.5`, false}, {`1e`, false}, {`-`, false}, {`+1`, false},
		{`true`, true}, {`false`, true}, {`null`, true}, {`tru`, false}, {`nul`, false}, {`truex`, false},
		{`""`, true}, {`"a\"b"`, true}, {`"a\\"`, true}, {`"a\\\"b"`, true}, {`"\\\\"`, true},
		{`"a\\"b"`, false}, {`"abc`, false}, {`"a\"`, false}, {`"\u00e9 é"`, true},
		{`"\/\b\f\n\r\t"`, true}, {`"\uD83D\uDE00"`, true}, {`"\uD83D"`, true}, {`"\uABCDx"`, true},
		{`"\x"`, false}, {`"\'"`, false}, {`"\u12"`, false}, {`"\u12G4"`, false}, {`"\`, false},
		{"\"tab\there\"", false}, {"\"nul\x00\"", false}, {"\"del\x7f\"", true}, {"\"\xff\xfe\"", true},
		{`{}`, true}, {`[]`, true}, {` { } `, true}, {`[1,[2,{"a":[3]}],{}]`, true},
		{`{"a":1,"b":{"c":[true,false,null]}}`, true}, {"{\n\t\"a\" : 1 \r}", true},
		{`{"a" 1}`, false}, {`{"a":}`, false}, {`{"a":1,}`, false}, {`{,}`, false}, {`{1:2}`, false},
		{`[1,]`, false}, {`[,1]`, false}, {`[1 2]`, false}, {`[}`, false}, {`{]`, false}, {`[[]`, false},
		{`[1.2.3]`, false}, {`[0x1]`, false}, {`[1e5e5]`, false}, {`[-01]`, false},
		{`{"a":1}}`, false}, {`1 2`, false}, {``, false}, {` `, false}, {`/`, false},
		{strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), true},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), false},
		{strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat("}", MaxDepth), true},
	}
	for _, tc := range cases {
		s := skipAll(tc.in)
		if ok := !s.Bad(); ok != tc.ok {
			t.Errorf("skip(%.40q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
		if s.Pos() != len(tc.in) {
			t.Errorf("skip(%.40q) stopped at %d of %d", tc.in, s.Pos(), len(tc.in))
		}
	}
}

func TestErrKinds(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	for in, want := range map[string]error{
		`[1,2]`:            nil,
		`[1,2`:             ErrSyntax,
		deep:               ErrDepth,
		deep + `x`:         ErrDepth, // the first error is kept
		`{"a":[1,}` + deep: ErrSyntax,
	} {
		if s := skipAll(in); !errors.Is(s.Err(), want) {
			t.Errorf("Err after skip(%.40q) = %v, want %v", in, s.Err(), want)
		}
	}
}

func TestRawString(t *testing.T) {
	for in, want := range map[string]string{
		`""x`:          ``,
		`"abc",`:       `abc`,
		`"a\"b"}`:      `a\"b`,
		`"a\\"]`:       `a\\`,
		`"\\\"\\"`:     `\\\"\\`,
		`"say \"n\""`:  `say \"n\"`,
		`"new\nline" `: `new\nline`,
		`"` + strings.Repeat("long ", 9) + `\"x\"" `: strings.Repeat("long ", 9) + `\"x\"`,
	} {
		s := New([]byte(in))
		got, ok := s.RawString()
		if !ok || s.Bad() || string(got) != want {
			t.Errorf("RawString(%q) = %q, %v (err %v), want %q", in, got, ok, s.Err(), want)
		}
		if s.Pos() != strings.LastIndexByte(in, '"')+1 {
			t.Errorf("RawString(%q) stopped at %d", in, s.Pos())
		}
	}
	// Another kind is skipped, not an error.
	s := New([]byte(`[1,"x"] `))
	if v, ok := s.RawString(); ok || v != nil || s.Bad() || s.Pos() != 7 {
		t.Errorf("RawString over an array = %q, %v, pos %d (err %v)", v, ok, s.Pos(), s.Err())
	}
}

func TestMembersAndElements(t *testing.T) {
	s := New([]byte(` {"a": [1, {"x":2}], "b" : "s", "c":{}} `))
	var keys []string
	for m := s.Object(); m.Next(); {
		keys = append(keys, string(m.Key()))
		if string(m.Key()) != "a" {
			s.Skip()
			continue
		}
		n := 0
		for e := s.Array(); e.Next(); n++ {
			s.Skip()
		}
		if n != 2 {
			t.Errorf("array a has %d elements, want 2", n)
		}
	}
	s.End()
	if s.Bad() || strings.Join(keys, ",") != "a,b,c" {
		t.Errorf("keys %v err %v, want a,b,c", keys, s.Err())
	}

	// A value of another shape is skipped and yields nothing.
	for _, in := range []string{`"str"`, `[1,2]`, `12`, `null`} {
		s := New([]byte(in))
		for m := s.Object(); m.Next(); {
			t.Errorf("object over %s yielded %q", in, m.Key())
		}
		s.End()
		if s.Bad() {
			t.Errorf("object over %s: skipping the value failed", in)
		}
	}
	s = New([]byte(`{"a":1}`))
	for e := s.Array(); e.Next(); {
		t.Errorf("array over an object yielded an element")
	}
	if s.End(); s.Bad() {
		t.Errorf("array over an object: skipping the value failed")
	}
}

func TestFind(t *testing.T) {
	s := New([]byte(`{"a":1,"k":true,"b":[{"k":false}],"k":false}`))
	var found []Kind
	for m := s.Object(); m.Find("k"); {
		found = append(found, s.Kind())
		s.Skip()
	}
	if s.End(); s.Bad() || len(found) != 2 || found[0] != True || found[1] != False {
		t.Errorf("find k = %v (err %v), want [true false]", found, s.Err())
	}
}

func TestKind(t *testing.T) {
	for in, want := range map[string]Kind{
		` {}`: Object, "\n[": Array, `"`: String, `-1`: Number, `0`: Number, `9`: Number,
		`t`: True, `f`: False, `n`: Null, ``: Invalid, `   `: Invalid, `+1`: Invalid, `x`: Invalid,
		"\x00": Invalid, `}`: Invalid,
	} {
		s := New([]byte(in))
		if got := s.Kind(); got != want {
			t.Errorf("Kind(%q) = %v, want %v", in, got, want)
		}
		if s.Bad() {
			t.Errorf("Kind(%q) set an error: it only looks", in)
		}
	}
	if got := Kind(200).String(); got != "invalid" {
		t.Errorf("Kind(200) = %q", got)
	}
}

// TestPos checks that Pos delimits every value exactly, whitespace outside,
// as FindModel's splice needs.
func TestPos(t *testing.T) {
	in := " {\"a\" :\t\"x\\\"y\" , \"b\":[ 12 , {\"c\":null} ,true ] } "
	want := []string{`"x\"y"`, `12`, `{"c":null}`, `true`, `[ 12 , {"c":null} ,true ]`}
	var got []string
	s := New([]byte(in))
	span := func(read func()) {
		start := s.Pos()
		read()
		got = append(got, in[start:s.Pos()])
	}
	for m := s.Object(); m.Next(); {
		if string(m.Key()) == "a" {
			span(s.Skip)
			continue
		}
		span(func() {
			for e := s.Array(); e.Next(); {
				span(s.Skip)
			}
		})
	}
	s.End()
	if s.Bad() || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("spans %q (err %v), want %q", got, s.Err(), want)
	}
}

func TestErrorsAreSticky(t *testing.T) {
	s := New([]byte(`{"a":[1,}, "b":2}`))
	n := 0
	for m := s.Object(); m.Next(); {
		n++
		for e := s.Array(); e.Next(); {
			s.Skip()
		}
	}
	if n != 1 || !errors.Is(s.Err(), ErrSyntax) || s.Pos() != len(`{"a":[1,}, "b":2}`) {
		t.Fatalf("members %d, err %v, pos %d: want one member, a syntax error, pos at the end", n, s.Err(), s.Pos())
	}
	if s.Kind() != Invalid {
		t.Errorf("Kind after an error = %v", s.Kind())
	}
	if v, ok := s.Uint(); ok || v != 0 {
		t.Errorf("Uint after an error = %d, %v", v, ok)
	}
	if _, ok := s.RawString(); ok {
		t.Errorf("RawString after an error succeeded")
	}
	for m := s.Object(); m.Next(); {
		t.Errorf("Object after an error yielded %q", m.Key())
	}
}
