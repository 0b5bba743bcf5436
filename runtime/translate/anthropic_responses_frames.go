package translate

import "encoding/json"

// Frame writers of the anthropic→responses stream (the event writers all streams to
// Anthropic clients share are in anthropic_frames.go).

// beginBlock closes the open block and starts content_block_start for the
// next, of kind; the caller writes the block object and ends the event.
func (s *responsesToAnthropicStream) beginBlock(kind blockKind) {
	s.closeBlock()
	s.open, s.index = kind, s.nextBlock
	s.nextBlock++
	s.beginBlockEvent("content_block_start", s.index)
	s.out = append(s.out, `,"content_block":`...)
}

// openBlock opens a block of kind whose start object is block.
func (s *responsesToAnthropicStream) openBlock(kind blockKind, block string) {
	s.beginBlock(kind)
	s.out = append(s.out, block...)
	s.out = append(s.out, '}')
	s.endEvent()
}

func (s *responsesToAnthropicStream) closeBlock() {
	if s.open == blockNone {
		return
	}
	s.beginBlockEvent("content_block_stop", s.index)
	s.out = append(s.out, '}')
	s.endEvent()
	s.open = blockNone
}

// delta writes a content_block_delta to the open block: head opens the
// delta object, raw (a JSON string) is its value.
func (s *responsesToAnthropicStream) delta(head string, raw []byte) {
	if !isJSONString(raw) {
		return
	}
	s.beginBlockEvent("content_block_delta", s.index)
	s.out = append(s.out, `,"delta":`...)
	s.out = append(s.out, head...)
	s.out = append(s.out, raw...)
	s.out = append(s.out, "}}"...)
	s.endEvent()
}

// appendFinal writes the one message_delta, with the stop reason and the
// whole usage, and message_stop.
func (s *responsesToAnthropicStream) appendFinal() {
	s.closeBlock()
	s.beginEvent("message_delta")
	s.out = append(s.out, `{"type":"message_delta","delta":{"stop_reason":"`...)
	s.out = append(s.out, s.stop...)
	s.out = append(s.out, `","stop_sequence":null},"usage":`...)
	usage, _ := marshal(fullAnthropicUsage(s.Usage())) // numbers only: cannot fail
	s.out = append(s.out, usage...)
	s.out = append(s.out, '}')
	s.endEvent()
	s.beginEvent("message_stop")
	s.out = append(s.out, `{"type":"message_stop"}`...)
	s.endEvent()
	s.state = done
}

// fail writes the upstream's failure as an Anthropic error event and ends
// the stream.
func (s *responsesToAnthropicStream) fail(code []byte, message string) {
	var c string
	_ = json.Unmarshal(code, &c) // a code may be null
	typ := anthropicErrorTypeOf("", c)
	if c == "server_is_overloaded" {
		typ = "overloaded_error"
	}
	s.beginEvent("error")
	s.out = append(s.out, anthropicErrorBody(typ, message)...)
	s.endEvent()
	s.reportUpstream(c, message)
	s.state = done
}
