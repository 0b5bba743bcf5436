package fakeprovider

import "encoding/json"

// Reasoning and custom tool calls of the Responses API: their items, their
// stream events, and the reasoning a stateless client replays.

// appendReasoning writes a reasoning item (b holds its id): the summary
// and encrypted content once done, as output_item.done and the final
// output show them; output_item.added announces an empty summary.
func (it *responseItem) appendReasoning(b []byte, done bool) []byte {
	b = append(b, `,"type":"reasoning","summary":[`...)
	if done && it.rep.text != "" {
		b = appendSummaryText(b, it.rep.text)
	}
	b = append(b, ']')
	if done && it.sealed != "" {
		b = append(b, `,"encrypted_content":`...)
		b = appendString(b, it.sealed)
	}
	return append(b, '}')
}

func appendSummaryText(b []byte, text string) []byte {
	b = append(b, `{"type":"summary_text","text":`...)
	b = appendString(b, text)
	return append(b, '}')
}

// appendCustomCall writes a custom tool call (b holds its id), whose input
// is text, empty until done. Unlike a function call it has no status.
func (it *responseItem) appendCustomCall(b []byte, done bool) []byte {
	input := ""
	if done {
		input = it.call.arguments
	}
	b = append(b, `,"type":"custom_tool_call","call_id":`...)
	b = appendString(b, it.callID)
	b = append(b, `,"name":`...)
	b = appendString(b, it.call.name)
	b = append(b, `,"input":`...)
	b = appendString(b, input)
	return append(b, '}')
}

// streamSummary sends a reasoning summary's part and text events; a
// reasoning item without a summary has none.
func (rs *responseStream) streamSummary(index int, it *responseItem) error {
	if it.rep.text == "" {
		return nil
	}
	summary := func(name string) []byte {
		return append(rs.location(name, index, it, false), `,"summary_index":0`...)
	}
	b := append(summary("response.reasoning_summary_part.added"), `,"part":`...)
	if err := rs.st.send(append(appendSummaryText(b, ""), '}')); err != nil {
		return err
	}
	for _, p := range it.rep.pieces {
		b := append(summary("response.reasoning_summary_text.delta"), `,"delta":`...)
		b = appendString(b, p)
		if err := rs.st.sendContent(append(b, '}')); err != nil {
			return err
		}
	}
	b = append(summary("response.reasoning_summary_text.done"), `,"text":`...)
	b = appendString(b, it.rep.text)
	if err := rs.st.send(append(b, '}')); err != nil {
		return err
	}
	b = append(summary("response.reasoning_summary_part.done"), `,"part":`...)
	return rs.st.send(append(appendSummaryText(b, it.rep.text), '}'))
}

// streamCustomInput sends a custom tool call's input in fragments, then
// whole.
func (rs *responseStream) streamCustomInput(index int, it *responseItem) error {
	for _, f := range fragments(it.call.arguments, argumentFragment) {
		b := append(rs.location("response.custom_tool_call_input.delta", index, it, false), `,"delta":`...)
		b = appendString(b, f)
		if err := rs.st.sendContent(append(b, '}')); err != nil {
			return err
		}
	}
	b := append(rs.location("response.custom_tool_call_input.done", index, it, false), `,"input":`...)
	b = appendString(b, it.call.arguments)
	return rs.st.send(append(b, '}'))
}

// replayedReasoning lists the reasoning items of the input.
func (r *wireRequest) replayedReasoning() []replayedReasoning {
	var items []struct {
		Type string `json:"type"`
		replayedReasoning
	}
	if json.Unmarshal(r.Input, &items) != nil {
		return nil // a string input, or one responsesConversation refused
	}
	var out []replayedReasoning
	for _, it := range items {
		if it.Type == "reasoning" {
			out = append(out, it.replayedReasoning)
		}
	}
	return out
}
