package caps

import (
	"testing"

	"github.com/pistra/pistra/runtime/jsonscan"
)

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
			f    func(*jsonscan.Scanner) bool
			want bool
		}{
			"isTrue":      {isTrue, tc.isTrue},
			"present":     {present, tc.present},
			"moreThanOne": {moreThanOne, tc.moreThanOne},
		} {
			s := jsonscan.New([]byte(tc.in))
			got := check.f(&s)
			s.End()
			if got != check.want || s.Bad() {
				t.Errorf("%s(%s) = %v (err %v), want %v", name, tc.in, got, s.Err(), check.want)
			}
		}
	}
}
