package caps

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// skipAll skips one value and checks nothing follows it.
func skipAll(in string) (pos int, ok bool) {
	s := scanner{buf: []byte(in)}
	s.skip()
	s.end()
	return s.pos, !s.bad
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
		{`{}`, true}, {`[]`, true}, {` { } `, true}, {`[1,[2,{"a":[3]}],{}]`, true},
		{`{"a":1,"b":{"c":[true,false,null]}}`, true}, {"{\n\t\"a\" : 1 \r}", true},
		{`{"a" 1}`, false}, {`{"a":}`, false}, {`{"a":1,}`, false}, {`{,}`, false}, {`{1:2}`, false},
		{`[1,]`, false}, {`[,1]`, false}, {`[1 2]`, false}, {`[}`, false}, {`{]`, false}, {`[[]`, false},
		{`{"a":1}}`, false}, {`1 2`, false}, {``, false}, {` `, false}, {`/`, false},
		{strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), true},
		{strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), false},
		{strings.Repeat(`{"a":`, maxDepth) + `1` + strings.Repeat("}", maxDepth), true},
	}
	for _, tc := range cases {
		pos, ok := skipAll(tc.in)
		if ok != tc.ok {
			t.Errorf("skip(%.40q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
		if pos != len(tc.in) {
			t.Errorf("skip(%.40q) stopped at %d of %d", tc.in, pos, len(tc.in))
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
	} {
		s := scanner{buf: []byte(in)}
		got := s.rawString()
		if s.bad || string(got) != want {
			t.Errorf("rawString(%q) = %q (bad %v), want %q", in, got, s.bad, want)
		}
		if s.pos != strings.LastIndexByte(in, '"')+1 {
			t.Errorf("rawString(%q) stopped at %d", in, s.pos)
		}
	}
}

func TestMembersAndElements(t *testing.T) {
	s := scanner{buf: []byte(` {"a": [1, {"x":2}], "b" : "s", "c":{}} `)}
	var keys []string
	for m := s.object(); m.next(); {
		keys = append(keys, string(m.key))
		if string(m.key) != "a" {
			s.skip()
			continue
		}
		n := 0
		for e := s.array(); e.next(); n++ {
			s.skip()
		}
		if n != 2 {
			t.Errorf("array a has %d elements, want 2", n)
		}
	}
	s.end()
	if s.bad || strings.Join(keys, ",") != "a,b,c" {
		t.Errorf("keys %v bad %v, want a,b,c", keys, s.bad)
	}

	// A value of another shape is skipped and yields nothing.
	for _, in := range []string{`"str"`, `[1,2]`, `12`, `null`} {
		s := scanner{buf: []byte(in)}
		for m := s.object(); m.next(); {
			t.Errorf("object over %s yielded %q", in, m.key)
		}
		s.end()
		if s.bad {
			t.Errorf("object over %s: skipping the value failed", in)
		}
	}
	s = scanner{buf: []byte(`{"a":1}`)}
	for e := s.array(); e.next(); {
		t.Errorf("array over an object yielded an element")
	}
	if s.end(); s.bad {
		t.Errorf("array over an object: skipping the value failed")
	}
}

func TestFind(t *testing.T) {
	s := scanner{buf: []byte(`{"a":1,"k":true,"b":[{"k":false}],"k":false}`)}
	var found []bool
	for m := s.object(); m.find("k"); {
		found = append(found, s.isTrue())
	}
	if s.end(); s.bad || len(found) != 2 || !found[0] || found[1] {
		t.Errorf("find k = %v (bad %v), want [true false]", found, s.bad)
	}
}

func TestValuePredicates(t *testing.T) {
	cases := []struct {
		in                           string
		isTrue, present, moreThanOne bool
	}{
		{`true`, true, true, false},
		{`false`, false, true, false},
		{`null`, false, false, false},
		{`"true"`, false, true, false},
		{`2`, false, true, true},
		{`1`, false, true, false},
		{`1.0`, false, true, false},
		{`1.5`, false, true, true},
		{`1e400`, false, true, true},
		{`-2`, false, true, false},
		{`"2"`, false, true, false},
		{`{}`, false, true, false},
		{`[2]`, false, true, false},
	}
	for _, tc := range cases {
		for name, check := range map[string]struct {
			f    func(*scanner) bool
			want bool
		}{
			"isTrue":      {(*scanner).isTrue, tc.isTrue},
			"present":     {(*scanner).present, tc.present},
			"moreThanOne": {(*scanner).moreThanOne, tc.moreThanOne},
		} {
			s := scanner{buf: []byte(tc.in)}
			got := check.f(&s)
			s.end()
			if got != check.want || s.bad {
				t.Errorf("%s(%s) = %v (bad %v), want %v", name, tc.in, got, s.bad, check.want)
			}
		}
	}
}

// FuzzSkip checks the scanner's grammar against encoding/json. A document
// json.Valid accepts must be skipped (nesting permitting); one the scanner
// accepts must be valid wherever the scanner's leniency cannot matter: it
// does not look inside strings, so escapes, control bytes and UTF-8 are the
// upstream's to reject.
func FuzzSkip(f *testing.F) {
	for _, seed := range []string{`{"a":[1,2.5e3,"x\"y",true,null,{}]}`, `[`, `"\\"`, `{"a":1,}`, `-0.0E-0`, ` [ [ ] ] `} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := scanner{buf: in}
		s.skip()
		s.end()
		valid := json.Valid(in)
		shallow := bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) <= maxDepth
		if valid && shallow && s.bad {
			t.Fatalf("json.Valid accepts %q, the scanner does not", in)
		}
		plain := utf8.Valid(in) && !bytes.ContainsAny(in, "\\") && !hasControl(in)
		if !s.bad && plain && !valid {
			t.Fatalf("the scanner accepts %q, json.Valid does not", in)
		}
	})
}

// hasControl reports a byte below 0x20: raw inside a string, json.Valid
// refuses it and the scanner does not look.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func TestIndexQuote(t *testing.T) {
	for _, in := range []string{``, `"`, `abc`, `ab"c`, strings.Repeat("x", 15) + `"`, strings.Repeat("x", 16) + `"`, strings.Repeat("x", 40) + `"x"`, strings.Repeat("x", 40)} {
		if got, want := indexQuote([]byte(in)), strings.IndexByte(in, '"'); got != want {
			t.Errorf("indexQuote(%q) = %d, want %d", in, got, want)
		}
	}
}
