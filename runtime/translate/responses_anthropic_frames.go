package translate

import (
	"encoding/json"
	"strconv"
)

// Frame writers of the responses→anthropic stream. Every event has its
// event: line and, in its data, its type and sequence_number first.

// begin starts event name; the caller appends members and calls end.
func (s *anthropicToResponsesStream) begin(name string) {
	s.out = append(s.out, "event: "...)
	s.out = append(s.out, name...)
	s.out = append(s.out, "\ndata: {\"type\":\""...)
	s.out = append(s.out, name...)
	s.out = append(s.out, `","sequence_number":`...)
	s.out = appendInt(s.out, s.seq)
	s.seq++
}

func (s *anthropicToResponsesStream) end() { s.out = append(s.out, "}\n\n"...) }

// open makes the next item the open one, of kind with an id of prefix,
// and writes its output_item.added up to the item's type; the caller
// writes the rest of the item and ends the event.
func (s *anthropicToResponsesStream) open(kind itemKind, prefix string) {
	s.kind = kind
	s.itemID = append(append(append(s.itemID[:0], prefix...), s.base...), '_')
	s.itemID = appendInt(s.itemID, s.index)
	s.begin("response.output_item.added")
	s.out = append(s.out, `,"output_index":`...)
	s.out = appendInt(s.out, s.index)
	s.out = append(s.out, `,"item":`...)
	s.out = s.appendItemHead(s.out)
}

// appendItemHead appends the open item's object up to its type.
func (s *anthropicToResponsesStream) appendItemHead(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, s.itemID...)
	b = append(b, `","type":"`...)
	switch s.kind {
	case itemMessage:
		b = append(b, "message"...)
	case itemReasoning, itemRedacted:
		b = append(b, "reasoning"...)
	case itemFunction:
		b = append(b, "function_call"...)
	case itemCustom:
		b = append(b, "custom_tool_call"...)
	}
	return append(b, '"')
}

// appendItemRef appends the item_id and output_index of the open item.
func (s *anthropicToResponsesStream) appendItemRef() {
	s.out = append(s.out, `,"item_id":"`...)
	s.out = append(s.out, s.itemID...)
	s.out = append(s.out, `","output_index":`...)
	s.out = appendInt(s.out, s.index)
}

// appendCall appends a call item's call_id and name, then tail.
func (s *anthropicToResponsesStream) appendCall(tail string) {
	s.out = append(s.out, `,"call_id":`...)
	s.out = appendJSONStringOr(s.out, s.callID, `""`)
	s.out = append(s.out, `,"name":`...)
	s.out = appendJSONStringOr(s.out, s.name, `""`)
	s.out = append(s.out, tail...)
}

// appendString appends the escaped text b as a JSON string.
func appendString(dst, escaped []byte) []byte {
	dst = append(dst, '"')
	dst = append(dst, escaped...)
	return append(dst, '"')
}

func (s *anthropicToResponsesStream) textDone() {
	s.begin("response.output_text.done")
	s.appendItemRef()
	s.out = append(s.out, `,"content_index":0,"text":`...)
	s.out = appendString(s.out, s.text)
	s.out = append(s.out, `,"logprobs":[]`...)
	s.end()
	s.begin("response.content_part.done")
	s.appendItemRef()
	s.out = append(s.out, `,"content_index":0,"part":`...)
	s.out = s.appendTextPart(s.out)
	s.end()
	item := s.appendItemHead(s.scratch[:0])
	item = append(item, `,"status":"completed","role":"assistant","content":[`...)
	item = append(s.appendTextPart(item), "]}"...)
	s.itemDone(item)
}

func (s *anthropicToResponsesStream) appendTextPart(b []byte) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = appendString(b, s.text)
	return append(b, `,"annotations":[]}`...)
}

// reasoningDone closes the summary part, if one opened, and writes the
// item with the thinking block packed into encrypted_content.
func (s *anthropicToResponsesStream) reasoningDone() {
	item := s.appendItemHead(s.scratch[:0])
	item = append(item, `,"summary":[`...)
	if s.summary {
		s.begin("response.reasoning_summary_text.done")
		s.appendItemRef()
		s.out = append(s.out, `,"summary_index":0,"text":`...)
		s.out = appendString(s.out, s.text)
		s.end()
		n := len(item)
		item = append(item, `{"type":"summary_text","text":`...)
		item = append(appendString(item, s.text), '}')
		s.begin("response.reasoning_summary_part.done")
		s.appendItemRef()
		s.out = append(s.out, `,"summary_index":0,"part":`...)
		s.out = append(s.out, item[n:]...)
		s.end()
	}
	item = append(item, `],"encrypted_content":"`...)
	// The block is built after the item, in the same buffer, and then
	// encoded onto the item's end.
	blockAt := len(item)
	if s.kind == itemRedacted {
		item = append(item, `{"type":"redacted_thinking","data":`...)
		item = append(appendString(item, s.text), '}')
	} else {
		item = append(item, `{"type":"thinking","thinking":`...)
		item = appendString(item, s.text)
		item = append(item, `,"signature":`...)
		item = append(appendString(item, s.sig), '}')
	}
	s.block = append(s.block[:0], item[blockAt:]...)
	item = appendPackedThinking(item[:blockAt], s.block)
	s.itemDone(append(item, `"}`...))
}

func (s *anthropicToResponsesStream) argumentsDone() {
	if len(s.text) == 0 {
		s.text = append(s.text, "{}"...) // a call with no input takes no arguments
	}
	s.begin("response.function_call_arguments.done")
	s.appendItemRef()
	s.out = append(s.out, `,"name":`...)
	s.out = appendJSONStringOr(s.out, s.name, `""`)
	s.out = append(s.out, `,"arguments":`...)
	s.out = appendString(s.out, s.text)
	s.end()
	item := append(s.appendItemHead(s.scratch[:0]), `,"status":"completed"`...)
	item = s.appendCallTo(item)
	item = append(item, `,"arguments":`...)
	s.itemDone(append(appendString(item, s.text), '}'))
}

// customDone decodes the custom call's one string from the input
// Anthropic streamed as JSON fragments, and gives it whole.
func (s *anthropicToResponsesStream) customDone() error {
	var args string
	var in customInput
	if err := json.Unmarshal(appendString(s.scratch[:0], s.text), &args); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return err
	}
	input, _ := marshal(in.Input) // a string: cannot fail
	s.begin("response.custom_tool_call_input.done")
	s.appendItemRef()
	s.out = append(s.out, `,"input":`...)
	s.out = append(s.out, input...)
	s.end()
	item := append(s.appendItemHead(s.scratch[:0]), `,"status":"completed"`...)
	item = s.appendCallTo(item)
	item = append(item, `,"input":`...)
	s.itemDone(append(append(item, input...), '}'))
	return nil
}

func (s *anthropicToResponsesStream) appendCallTo(b []byte) []byte {
	b = append(b, `,"call_id":`...)
	b = appendJSONStringOr(b, s.callID, `""`)
	b = append(b, `,"name":`...)
	return appendJSONStringOr(b, s.name, `""`)
}

// itemDone writes output_item.done for the finished item and keeps it for
// the terminal event.
func (s *anthropicToResponsesStream) itemDone(item []byte) {
	s.scratch = item
	s.begin("response.output_item.done")
	s.out = append(s.out, `,"output_index":`...)
	s.out = appendInt(s.out, s.index)
	s.out = append(s.out, `,"item":`...)
	s.out = append(s.out, item...)
	s.end()
	if len(s.items) > 0 {
		s.items = append(s.items, ',')
	}
	s.items = append(s.items, item...)
}

// appendResponse appends the Response object as the stream stands, with
// status; the terminal events add their details through appendFinal.
func (s *anthropicToResponsesStream) appendResponse(status string) {
	s.out = append(s.out, `{"id":"resp_`...)
	s.out = append(s.out, s.base...)
	s.out = append(s.out, `","object":"response","created_at":`...)
	s.out = strconv.AppendInt(s.out, s.created, 10)
	s.out = append(s.out, `,"status":"`...)
	s.out = append(s.out, status...)
	s.out = append(s.out, `","model":`...)
	s.out = append(s.out, s.model...)
	s.out = append(s.out, `,"output":[`...)
	s.out = append(s.out, s.items...)
	s.out = append(s.out, ']')
	if status == "in_progress" {
		s.out = append(s.out, `,"error":null,"incomplete_details":null,"usage":null}`...)
	}
}

// appendFinal writes response.completed, or response.incomplete for a
// stop short of the answer, with the usage.
func (s *anthropicToResponsesStream) appendFinal() {
	var stop string
	_ = json.Unmarshal(s.stop, &stop) // a validated string
	status, incomplete := responseStatus(stop)
	s.begin("response." + status) // completed or incomplete: a constant each
	s.out = append(s.out, `,"response":`...)
	s.appendResponse(status)
	s.out = append(s.out, `,"error":null,"incomplete_details":`...)
	if incomplete != nil {
		s.out = append(s.out, `{"reason":"`...)
		s.out = append(s.out, incomplete.Reason...)
		s.out = append(s.out, `"}`...)
	} else {
		s.out = append(s.out, "null"...)
	}
	usage, _ := marshal(responsesUsage(s.Usage())) // numbers only: cannot fail
	s.out = append(s.out, `,"usage":`...)
	s.out = append(s.out, usage...)
	s.out = append(s.out, '}')
	s.end()
	s.state = done
}

// failed writes the upstream's error event as response.failed, with the
// code a Responses client classifies by, and ends the stream.
func (s *anthropicToResponsesStream) failed() {
	e := &s.ev.Error
	if s.state == awaitingStart {
		s.base = append(s.base[:0], "failed"...)
		s.created = now().Unix()
		s.announce()
	}
	code := responsesErrorCode(e.Type, e.Message)
	if code == "" {
		code = e.Type
	}
	body, _ := marshal(respError{Code: code, Message: e.Message}) // strings only: cannot fail
	s.begin("response.failed")
	s.out = append(s.out, `,"response":`...)
	s.appendResponse("failed")
	s.out = append(s.out, `,"error":`...)
	s.out = append(s.out, body...)
	s.out = append(s.out, `,"incomplete_details":null,"usage":null}`...)
	s.end()
	s.reportUpstream(e.Type, e.Message)
	s.state = done
}
