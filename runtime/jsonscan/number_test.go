package jsonscan

import (
	"errors"
	"testing"
)

func TestUint(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
		err  error // after End
	}{
		{`0`, 0, true, nil},
		{`7`, 7, true, nil},
		{` 1234 `, 1234, true, nil},
		{`18446744073709551615`, 1<<64 - 1, true, nil},
		{`18446744073709551616`, 0, false, nil},
		{`99999999999999999999`, 0, false, nil},
		{`184467440737095516150`, 0, false, nil},
		{`-1`, 0, false, nil},
		{`-0`, 0, false, nil},
		{`1.0`, 0, false, nil},
		{`0.5`, 0, false, nil},
		{`1e3`, 0, false, nil},
		{`1E3`, 0, false, nil},
		{`1e+3`, 0, false, nil},
		{`"12"`, 0, false, nil},
		{`null`, 0, false, nil},
		{`[1]`, 0, false, nil},
		{`{"a":1}`, 0, false, nil},
		{`01`, 0, false, ErrSyntax},
		{`00`, 0, false, ErrSyntax},
		{`-01`, 0, false, ErrSyntax},
		{`1.`, 0, false, ErrSyntax},
		{`+1`, 0, false, ErrSyntax},
		{`1x`, 1, true, ErrSyntax},
		{``, 0, false, ErrSyntax},
	}
	for _, tc := range cases {
		s := New([]byte(tc.in))
		v, ok := s.Uint()
		if v != tc.want || ok != tc.ok {
			t.Errorf("Uint(%s) = %d, %v, want %d, %v", tc.in, v, ok, tc.want, tc.ok)
		}
		if s.End(); !errors.Is(s.Err(), tc.err) {
			t.Errorf("Uint(%s): err %v, want %v", tc.in, s.Err(), tc.err)
		}
	}
}

func TestNumber(t *testing.T) {
	for in, want := range map[string]string{`0`: `0`, `-12.5e+3,`: `-12.5e+3`, `1E9]`: `1E9`, `-0.0 `: `-0.0`} {
		s := New([]byte(in))
		tok, ok := s.Number()
		if !ok || string(tok) != want || s.Pos() != len(want) {
			t.Errorf("Number(%q) = %q, %v, pos %d, want %q", in, tok, ok, s.Pos(), want)
		}
	}
	s := New([]byte(`"1"`))
	if tok, ok := s.Number(); ok || tok != nil || s.Bad() || s.Pos() != 3 {
		t.Errorf("Number over a string = %q, %v, pos %d (err %v)", tok, ok, s.Pos(), s.Err())
	}
}
