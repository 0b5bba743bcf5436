package meter

import "github.com/pistra/pistra/runtime/jsonscan"

// NullUsage locates the top-level "usage":null member of a chat chunk, the
// one stream_options.include_usage adds to every chunk, so a relay that
// asked on a client's behalf can give the client its chunks as they would
// have been. The span includes one neighbouring comma, so cutting
// data[start:end] leaves a well-formed object; ok is false when the chunk
// has no such member (or is not one well-formed object).
func NullUsage(data []byte) (start, end int, ok bool) {
	s := jsonscan.New(data)
	prevEnd := -1 // where the member before the current one ended
	for m := s.Object(); m.Next(); {
		// Next has consumed the key and the colon; the key began at the
		// first quote after the previous member's end (or the brace).
		keyAt := s.Pos()
		if string(m.Key()) != "usage" || s.Kind() != jsonscan.Null {
			s.Skip()
			prevEnd = s.Pos()
			continue
		}
		s.Skip()
		if ok || s.Bad() {
			return 0, 0, false // twice: leave it alone
		}
		start, end, ok = memberSpan(data, prevEnd, keyAt, s.Pos())
		prevEnd = s.Pos()
	}
	if s.End(); s.Bad() {
		return 0, 0, false
	}
	return start, end, ok
}

// memberSpan is the span of the member whose value ends at valueEnd, with
// the comma before it (after the previous member, which ended at prevEnd)
// or, for a first member, the comma after it.
func memberSpan(data []byte, prevEnd, valueAt, valueEnd int) (int, int, bool) {
	if prevEnd >= 0 {
		return prevEnd, valueEnd, true // ,"usage":null
	}
	key := lastIndex(data[:valueAt], '{') + 1
	for i := valueEnd; i < len(data); i++ {
		switch data[i] {
		case ',':
			return key, i + 1, true // "usage":null,
		case '}':
			return key, valueEnd, true // the only member
		}
	}
	return 0, 0, false
}

func lastIndex(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}
