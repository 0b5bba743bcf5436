package dialect

import (
	"github.com/pistra/pistra/runtime/jsonquote"
	"github.com/pistra/pistra/runtime/jsonscan"
)

// StreamFields is what an OpenAI chat or completions body says about
// streaming and usage, and how to edit it so the stream reports usage: a
// stream reports none unless stream_options.include_usage is true, and a
// metered stream that did not ask has nothing to settle against.
type StreamFields struct {
	// Stream is true when the top-level "stream" is true.
	Stream bool
	// AskedUsage is true when the client set include_usage to true: it
	// gets its usage chunk, and nothing needs asking.
	AskedUsage bool
	// ask is the edit that makes the stream report usage; ask.text is ""
	// when the body cannot be edited safely (stream_options twice, or of
	// an unexpected kind) or needs no edit.
	ask         splice
	optionsSeen bool
	objectStart int // just past the body's opening brace
}

// splice replaces body[start:end] with text (an insertion when start ==
// end).
type splice struct {
	start, end int
	text       string
}

// CanAskUsage reports whether the body streams without asking for usage
// and can be edited to ask (AppendRequest with askUsage).
func (f *StreamFields) CanAskUsage() bool {
	return f.Stream && !f.AskedUsage && f.askText() != ""
}

// askText is the edit's text, after the whole body was read: with no
// stream_options at all, the member is added first in the object.
func (f *StreamFields) askText() string {
	if !f.optionsSeen {
		return `"stream_options":{"include_usage":true},`
	}
	return f.ask.text
}

func (f *StreamFields) askSplice() splice {
	if !f.optionsSeen {
		return splice{start: f.objectStart, end: f.objectStart, text: f.askText()}
	}
	return f.ask
}

// readOptions reads the top-level stream_options value at s and records
// the edit that would set include_usage to true.
func (f *StreamFields) readOptions(s *jsonscan.Scanner) {
	if f.optionsSeen { // given twice: which copy an upstream reads is unknown
		f.ask = splice{}
		s.Skip()
		return
	}
	f.optionsSeen = true
	start := s.Pos()
	switch s.Kind() {
	case jsonscan.Null:
		s.Skip()
		f.ask = splice{start: start, end: s.Pos(), text: `{"include_usage":true}`}
		return
	case jsonscan.Object:
	default:
		s.Skip()
		return
	}
	f.ask = splice{start: start + 1, end: start + 1, text: `"include_usage":true`}
	members := 0
	seen := false
	for m := s.Object(); m.Next(); members++ {
		if !jsonscan.Equal(m.Key(), "include_usage") {
			s.Skip()
			continue
		}
		vstart, kind := s.Pos(), s.Kind()
		s.Skip()
		switch {
		case seen:
			f.ask, f.AskedUsage = splice{}, false
		case kind == jsonscan.True:
			f.AskedUsage = true
			f.ask = splice{}
		case kind == jsonscan.False:
			f.ask = splice{start: vstart, end: s.Pos(), text: "true"}
		default:
			f.ask = splice{}
		}
		seen = true
	}
	if !seen && members > 0 {
		f.ask.text += ","
	}
}

// AppendRequest appends body to dst with the model value replaced by model
// (when it differs from the requested one) and, when askUsage is set, the
// stream asked to report usage (CanAskUsage must hold). The bytes around
// the edits are copied as they are.
func AppendRequest(dst, body []byte, h *Head, model string, askUsage bool) []byte {
	m := splice{start: h.Model.Start, end: h.Model.End}
	if model == h.Model.Name {
		m.end = m.start // an empty edit: the value stays
	}
	edits := [2]splice{m, {start: len(body), end: len(body)}}
	if askUsage {
		edits[1] = h.Stream.askSplice()
	}
	if edits[1].start < edits[0].start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	at := 0
	for _, e := range edits {
		dst = append(dst, body[at:e.start]...)
		if e == m && m.end != m.start {
			dst = jsonquote.Append(dst, model)
		} else {
			dst = append(dst, e.text...)
		}
		at = e.end
	}
	return append(dst, body[at:]...)
}
