package fakeprovider

// messageStream writes the events of an Anthropic stream. Every event has
// an event: line naming it, which the SDKs require, and a data payload whose
// type repeats the name.
type messageStream struct {
	st *stream
}

func (ms messageStream) event(name string) []byte {
	b := ms.st.begin(name)
	b = append(b, `{"type":"`...)
	b = append(b, name...)
	return append(b, '"')
}

// streamMessage sends message_start, each block's start, deltas and stop
// (with a ping after the first start), message_delta with the stop reason
// and the cumulative usage, and message_stop.
func (x *exchange) streamMessage(t *messageTurn) {
	ms := messageStream{st: x.startStream()}
	defer ms.st.close()
	b := append(ms.event("message_start"), `,"message":`...)
	b = t.appendMessage(b, false)
	if ms.st.send(append(b, '}')) != nil {
		return
	}
	for i := range t.blocks {
		if ms.streamBlock(i, &t.blocks[i]) != nil {
			return
		}
	}
	b = append(ms.event("message_delta"), `,"delta":{"stop_reason":`...)
	b = appendString(b, t.stopReason)
	b = append(b, `,"stop_sequence":`...)
	b = appendStringOrNull(b, t.stopSequence)
	b = append(b, `,"stop_details":null},"usage":`...)
	b = appendAnthropicUsage(b, t.usage, usageDelta)
	if ms.st.send(append(b, '}')) != nil {
		return
	}
	_ = ms.st.sendTerminal(append(ms.event("message_stop"), '}'))
}

func (ms messageStream) streamBlock(index int, c *contentBlock) error {
	b := ms.indexed("content_block_start", index)
	b = append(b, `,"content_block":`...)
	b = c.appendBlock(b, false)
	if err := ms.st.send(append(b, '}')); err != nil {
		return err
	}
	if index == 0 {
		if err := ms.st.send(append(ms.event("ping"), '}')); err != nil {
			return err
		}
	}
	var err error
	switch c.kind {
	case "thinking":
		if !c.omitted {
			err = ms.deltas(index, "thinking_delta", "thinking", c.rep.pieces)
		}
		if err == nil {
			err = ms.delta(index, "signature_delta", "signature", c.signature)
		}
	case "tool_use":
		// Like Anthropic, open with an empty fragment.
		err = ms.delta(index, "input_json_delta", "partial_json", "")
		if err == nil {
			err = ms.deltas(index, "input_json_delta", "partial_json", fragments(c.call.arguments, argumentFragment))
		}
	default:
		err = ms.deltas(index, "text_delta", "text", c.rep.pieces)
	}
	if err != nil {
		return err
	}
	return ms.st.send(append(ms.indexed("content_block_stop", index), '}'))
}

func (ms messageStream) indexed(name string, index int) []byte {
	b := append(ms.event(name), `,"index":`...)
	return appendInt(b, index)
}

func (ms messageStream) deltas(index int, kind, field string, values []string) error {
	for _, v := range values {
		if err := ms.delta(index, kind, field, v); err != nil {
			return err
		}
	}
	return nil
}

// delta sends content_block_delta {"delta":{"type":kind, field:value}}.
func (ms messageStream) delta(index int, kind, field, value string) error {
	b := append(ms.indexed("content_block_delta", index), `,"delta":{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = appendString(b, value)
	return ms.st.sendContent(append(b, "}}"...))
}
