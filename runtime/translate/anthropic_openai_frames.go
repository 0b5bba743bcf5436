package translate

import "strconv"

// Frame writers of the anthropic→openai stream (the event writers all streams to
// Anthropic clients share are in anthropic_frames.go).

// openBlock starts a content_block_start event for the next block and marks
// it open; the caller writes the block object and ends the event.
func (s *openAIToAnthropicStream) openBlock(text bool) {
	s.open, s.openText = s.nextBlock, text
	s.nextBlock++
	s.beginBlockEvent("content_block_start", s.open)
	s.out = append(s.out, `,"content_block":`...)
}

func (s *openAIToAnthropicStream) closeBlock() {
	if s.open < 0 {
		return
	}
	s.beginBlockEvent("content_block_stop", s.open)
	s.out = append(s.out, '}')
	s.endEvent()
	s.open = -1
}

// beginDelta starts a content_block_delta event; the caller writes the delta
// object and closes both braces.
func (s *openAIToAnthropicStream) beginDelta(block int) {
	s.beginBlockEvent("content_block_delta", block)
	s.out = append(s.out, `,"delta":`...)
}

// appendFinal writes message_delta, with the stop reason and the whole
// usage (every count, as clients overwrite message_start's with these), and
// message_stop.
func (s *openAIToAnthropicStream) appendFinal() {
	s.closeBlock()
	stop, seq := stopReason(s.finish, s.stopSeq, len(s.calls) > 0, s.refused)
	s.beginEvent("message_delta")
	s.out = append(s.out, `{"type":"message_delta","delta":{"stop_reason":"`...)
	s.out = append(s.out, stop...)
	s.out = append(s.out, `","stop_sequence":`...)
	s.out = appendJSONStringOr(s.out, s.stopSeqIf(seq), "null")
	s.out = append(s.out, `},"usage":`...)
	s.out = appendAnthropicUsage(s.out, anthropicUsage(s.Usage()))
	s.out = append(s.out, '}')
	s.endEvent()
	s.beginEvent("message_stop")
	s.out = append(s.out, `{"type":"message_stop"}`...)
	s.endEvent()
	s.state = done
}

// stopSeqIf is the raw stop sequence when the stop reason is stop_sequence.
func (s *openAIToAnthropicStream) stopSeqIf(seq *string) []byte {
	if seq == nil {
		return nil
	}
	return s.stopSeq
}

// appendError writes the upstream's error event as an Anthropic error
// event and ends the stream.
func (s *openAIToAnthropicStream) appendError(typ, message string) {
	s.beginEvent("error")
	s.out = append(s.out, anthropicErrorBody(typ, message)...)
	s.endEvent()
	s.state = done
}

// appendJSONStringOr appends raw when it is a JSON string, else alt.
func appendJSONStringOr(b, raw []byte, alt string) []byte {
	if isJSONString(raw) {
		return append(b, raw...)
	}
	return append(b, alt...)
}

// appendAnthropicUsage writes u as antClientUsage marshals, without the
// allocation of marshalling.
func appendAnthropicUsage(b []byte, u antClientUsage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendUint(b, u.InputTokens, 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendUint(b, u.CacheCreationInputTokens, 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendUint(b, u.CacheReadInputTokens, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendUint(b, u.OutputTokens, 10)
	return append(b, '}')
}
