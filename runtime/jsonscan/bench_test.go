package jsonscan

import (
	"strings"
	"testing"
)

// doc is a body of the shape the gateway reads: short keys, long prose
// values with a few escapes, and a usage object of counts.
var doc = []byte(`{"id":"x","messages":[` + strings.Repeat(`{"role":"user","content":"`+
	strings.Repeat(`a naïve \"quoted\" phrase, tabs\tand newlines\n in prose `, 40)+`"},`, 200) +
	`{"role":"user","content":"end"}],"usage":{"prompt_tokens":1200,"completion_tokens":345}}`)

// readUsage is what a usage reader does: find one object, read counts in
// it, skip the rest.
func readUsage(s *Scanner) (sum uint64) {
	for m := s.Object(); m.Next(); {
		if string(m.Key()) != "usage" {
			s.Skip()
			continue
		}
		for u := s.Object(); u.Next(); {
			n, _ := s.Uint()
			sum += n
		}
	}
	s.End()
	return sum
}

func TestReadsDoNotAllocate(t *testing.T) {
	var buf [16]byte
	n := testing.AllocsPerRun(100, func() {
		s := New(doc)
		if readUsage(&s) != 1545 || s.Bad() {
			t.Fatal("doc does not read")
		}
		v := New([]byte(`["mod\u0065l","caf\u00e9",1.5e3]`))
		for e := v.Array(); e.Next(); {
			if raw, ok := v.RawString(); ok {
				Unquote(buf[:0], raw)
				Equal(raw, "model")
			}
		}
	})
	if n != 0 {
		t.Errorf("reads allocate %v times", n)
	}
}

// BenchmarkScan reads the usage out of doc, checking every string (New) and
// trusting strings as NewValid does: the difference is the price of
// checking string contents byte by byte.
func BenchmarkScan(b *testing.B) {
	for _, c := range []struct {
		name  string
		start func([]byte) Scanner
	}{{"New", New}, {"NewValid", NewValid}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				s := c.start(doc)
				readUsage(&s)
			}
		})
	}
}
