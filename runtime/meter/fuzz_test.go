package meter

import (
	"bytes"
	"encoding/json"
	"github.com/pistra/pistra/runtime/jsonscan"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReadAnswer reads any body in every shape: no panic, an error exactly
// when encoding/json finds the body is not one JSON document (nesting
// permitting), and figures the input could have stated (see checkFigures).
func FuzzReadAnswer(f *testing.F) {
	for _, body := range []string{chatAnswer, embeddingsAnswer, completionsAnswer, responsesAnswer, messagesAnswer,
		`{"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":1,"prompt_tokens_details":null}}`,
		`{"usage":{"input_tokens":1,"cache_read_input_tokens":null,"output_tokens":-2,"output_tokens_details":{"thinking_tokens":1.5}}}`} {
		for shape := range 3 {
			f.Add(uint8(shape), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, shape uint8, body []byte) {
		sh := Shape(shape % 3)
		u, err := ReadAnswer(sh, body)
		if valid := json.Valid(body); err == nil && !valid || err != nil && valid && shallow(body) {
			t.Fatalf("ReadAnswer error %v, json.Valid %v", err, valid)
		}
		if err != nil && u != (Usage{}) {
			t.Fatalf("a broken body reads as %+v", u)
		}
		checkFigures(t, sh, body, u)
	})
}

// FuzzStreamMeter feeds any bytes, split into events at blank lines, to a
// meter of every shape: no panic, an event that does not read as one JSON
// value changes nothing (bar chat's [DONE]; string contents are not
// checked in a stream, see StreamMeter.Event), flags a shape can raise, a bounded error
// description, and figures the input could have stated.
func FuzzStreamMeter(f *testing.F) {
	for _, c := range streamCases {
		f.Add(uint8(c.shape), []byte(strings.Join(c.events, "\n\n")))
	}
	var m StreamMeter
	f.Fuzz(func(t *testing.T, shape uint8, in []byte) {
		sh := Shape(shape % 3)
		m.Reset(sh)
		for _, ev := range bytes.Split(in, []byte("\n\n")) {
			before, ended := m.Usage(), m.Ended()
			flags := m.Event(ev)
			done := sh == ShapeChat && string(bytes.TrimSpace(ev)) == "[DONE]"
			switch {
			case done && flags != Terminal:
				t.Fatalf("[DONE]: flags %03b", flags)
			case !done && !readable(ev) && (flags != 0 || m.Usage() != before || m.Ended() != ended):
				t.Fatalf("malformed %q: flags %03b, usage %+v (was %+v)", ev, flags, m.Usage(), before)
			case flags&UsageOnly != 0 && sh != ShapeChat, flags&^(UsageOnly|Terminal|Error) != 0:
				t.Fatalf("shape %d: flags %03b", sh, flags)
			case flags&Terminal != 0 && !m.Ended():
				t.Fatal("a terminal event does not end the stream")
			case flags&Error != 0 && m.UpstreamError() == nil:
				t.Fatal("an error event leaves no description")
			}
		}
		if err := m.UpstreamError(); err != nil && (len(err.Error()) > 410 || !utf8.ValidString(err.Error())) {
			t.Fatalf("description of %d bytes: %q", len(err.Error()), err)
		}
		checkFigures(t, sh, in, m.Usage())
	})
}

// shallow reports input jsonscan does not refuse for its nesting alone.
func shallow(b []byte) bool { return bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) <= 1024 }

// checkFigures holds a usage to what the input states. Every digit run in
// the input is taken as a literal (a superset of its integer numbers, so a
// looser bound, never a false alarm): no figure exceeds their saturating
// sum, and every figure the meter copies rather than derives is zero or
// one of them. Only Anthropic's input and the totals may be derived, and
// only as Usage documents.
func checkFigures(t *testing.T, shape Shape, in []byte, u Usage) {
	t.Helper()
	lits, sum := literals(in)
	copied := []uint64{u.CachedInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.ReasoningTokens}
	if shape == ShapeMessages {
		if u.TotalTokens != add(u.InputTokens, u.OutputTokens) {
			t.Fatalf("total %d is not input plus output: %+v", u.TotalTokens, u)
		}
	} else {
		copied = append(copied, u.InputTokens)
		if !lits[u.TotalTokens] && u.TotalTokens != add(u.InputTokens, u.OutputTokens) {
			t.Fatalf("total %d is neither stated nor input plus output: %+v", u.TotalTokens, u)
		}
	}
	for _, n := range copied {
		if n != 0 && !lits[n] {
			t.Fatalf("%d is no literal of the input: %+v", n, u)
		}
	}
	for _, n := range []uint64{u.InputTokens, u.CachedInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.TotalTokens, u.ReasoningTokens} {
		if n > sum {
			t.Fatalf("%d exceeds the sum %d of the input's literals: %+v", n, sum, u)
		}
	}
}

// literals returns the values of the input's digit runs (saturating) and
// their saturating sum.
func literals(in []byte) (map[uint64]bool, uint64) {
	lits := map[uint64]bool{}
	var sum uint64
	for i := 0; i < len(in); {
		if in[i] < '0' || in[i] > '9' {
			i++
			continue
		}
		var v uint64
		for ; i < len(in) && in[i] >= '0' && in[i] <= '9'; i++ {
			d := uint64(in[i] - '0')
			if v > (math.MaxUint64-d)/10 {
				v = math.MaxUint64
			} else if v != math.MaxUint64 {
				v = v*10 + d
			}
		}
		lits[v] = true
		sum = add(sum, v)
	}
	return lits, sum
}

// readable is whether a stream event reads as one JSON value to the
// meter, which checks structure but not string contents.
func readable(ev []byte) bool {
	s := jsonscan.NewValid(ev)
	s.Skip()
	s.End()
	return !s.Bad()
}
