package fakeprovider

// responseStream numbers the events of a Responses API stream.
type responseStream struct {
	st  *stream
	seq int
}

// event starts an event named name, with its type and sequence number
// written; the caller appends the rest, closes the object and sends it.
func (rs *responseStream) event(name string) []byte {
	b := rs.st.begin(name)
	b = append(b, `{"type":"`...)
	b = append(b, name...)
	b = append(b, `","sequence_number":`...)
	b = appendInt(b, rs.seq)
	rs.seq++
	return b
}

// streamResponse sends the named events of a Responses API stream:
// response.created and response.in_progress, each output item announced,
// filled and closed, then response.completed (or response.incomplete) with
// the full response and its usage. There is no [DONE].
func (x *exchange) streamResponse(t *responseTurn) {
	rs := &responseStream{st: x.startStream()}
	defer rs.st.close()
	for _, name := range []string{"response.created", "response.in_progress"} {
		b := append(rs.event(name), `,"response":`...)
		b = t.appendResponse(b, false)
		if rs.st.send(append(b, '}')) != nil {
			return
		}
	}
	for i := range t.items {
		if rs.streamItem(i, &t.items[i]) != nil {
			return
		}
	}
	terminal := "response.completed"
	if t.incomplete {
		terminal = "response.incomplete"
	}
	b := append(rs.event(terminal), `,"response":`...)
	b = t.appendResponse(b, true)
	_ = rs.st.sendTerminal(append(b, '}'))
}

func (rs *responseStream) streamItem(index int, it *responseItem) error {
	if err := rs.itemEvent("response.output_item.added", index, it, false); err != nil {
		return err
	}
	var err error
	switch it.kind {
	case "message":
		err = rs.streamText(index, it)
	case "function_call":
		err = rs.streamArguments(index, it)
	case "custom_tool_call":
		err = rs.streamCustomInput(index, it)
	case "reasoning":
		err = rs.streamSummary(index, it)
	}
	if err != nil {
		return err
	}
	return rs.itemEvent("response.output_item.done", index, it, true)
}

func (rs *responseStream) itemEvent(name string, index int, it *responseItem, done bool) error {
	b := append(rs.event(name), `,"output_index":`...)
	b = appendInt(b, index)
	b = append(b, `,"item":`...)
	b = it.appendItem(b, done)
	return rs.st.send(append(b, '}'))
}

// location starts an event about content part 0 of item it.
func (rs *responseStream) location(name string, index int, it *responseItem, withContent bool) []byte {
	b := append(rs.event(name), `,"item_id":`...)
	b = appendString(b, it.id)
	b = append(b, `,"output_index":`...)
	b = appendInt(b, index)
	if withContent {
		b = append(b, `,"content_index":0`...)
	}
	return b
}

func (rs *responseStream) streamText(index int, it *responseItem) error {
	b := append(rs.location("response.content_part.added", index, it, true), `,"part":`...)
	if err := rs.st.send(append(appendOutputText(b, ""), '}')); err != nil {
		return err
	}
	for _, p := range it.rep.pieces {
		b := append(rs.location("response.output_text.delta", index, it, true), `,"delta":`...)
		b = appendString(b, p)
		if err := rs.st.sendContent(append(b, `,"logprobs":[]}`...)); err != nil {
			return err
		}
	}
	b = append(rs.location("response.output_text.done", index, it, true), `,"text":`...)
	b = appendString(b, it.rep.text)
	if err := rs.st.send(append(b, `,"logprobs":[]}`...)); err != nil {
		return err
	}
	b = append(rs.location("response.content_part.done", index, it, true), `,"part":`...)
	return rs.st.send(append(appendOutputText(b, it.rep.text), '}'))
}

func (rs *responseStream) streamArguments(index int, it *responseItem) error {
	for _, f := range fragments(it.call.arguments, argumentFragment) {
		b := append(rs.location("response.function_call_arguments.delta", index, it, false), `,"delta":`...)
		b = appendString(b, f)
		if err := rs.st.sendContent(append(b, '}')); err != nil {
			return err
		}
	}
	b := append(rs.location("response.function_call_arguments.done", index, it, false), `,"name":`...)
	b = appendString(b, it.call.name)
	b = append(b, `,"arguments":`...)
	b = appendString(b, it.call.arguments)
	return rs.st.send(append(b, '}'))
}
