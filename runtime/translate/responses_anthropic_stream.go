package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/pistra/pistra/runtime/meter"
)

// itemKind is what the open output item of a translated Responses stream
// is.
type itemKind uint8

const (
	itemNone itemKind = iota
	itemMessage
	itemReasoning
	itemRedacted
	itemFunction
	itemCustom
)

// anthropicToResponsesStream turns an Anthropic event stream into a
// Responses event stream.
type anthropicToResponsesStream struct {
	streamCore
	model    []byte // the client model, JSON-encoded
	dec      eventDecoder
	ev       antEvent
	isCustom func(string) bool
	usage    meter.UsageReader
	seq      int
	created  int64
	base     []byte // the message id without msg_, for every id the stream mints
	stop     []byte // the stop reason, raw

	kind    itemKind
	index   int    // output index of the open item
	next    int    // output index of the next item
	itemID  []byte // the open item's id
	callID  []byte // raw JSON string
	name    []byte // raw JSON string
	text    []byte // the open item's text, arguments or thinking, JSON-escaped
	sig     []byte // the open thinking block's signature, JSON-escaped
	summary bool   // a summary part is open on the reasoning item
	items   []byte // the finished items, comma-separated, for the terminal event
	scratch []byte // the item being finished
	block   []byte // the thinking block being packed
}

// NewAnthropicToResponsesStream returns a Stream that reads an Anthropic
// Messages event stream and writes Responses events to w, for a Responses
// client. clientModel is the response's model unless message_start names
// the model that served; isCustom tells the client's custom tools.
//
// message_start becomes response.created and response.in_progress; each
// content block becomes one output item, announced by output_item.added
// and finished by output_item.done: text as a message with its content
// part and output_text deltas, thinking as a reasoning item with its text
// as summary deltas and the block packed into encrypted_content, tool_use
// as a function_call with argument deltas, or, for a custom tool, a
// custom_tool_call whose input is given whole at its end. message_stop
// becomes response.completed, or response.incomplete for a max_tokens or
// refusal stop, carrying every item and the usage. An upstream error event
// becomes response.failed, with the code Codex classifies by. Every event
// carries its type and sequence_number, and nothing outside the Responses
// event union is sent.
func NewAnthropicToResponsesStream(w io.Writer, clientModel string, isCustom func(string) bool) Stream {
	model, _ := json.Marshal(clientModel) // a string: cannot fail
	s := &anthropicToResponsesStream{model: model, isCustom: isCustom}
	s.usage.Reset(meter.ShapeMessages)
	s.streamCore = streamCore{w: w, frames: s}
	return s
}

func (s *anthropicToResponsesStream) Usage() meter.Usage { return s.usage.Usage() }

// Event handles one upstream event; it implements sse.Handler.
func (s *anthropicToResponsesStream) Event(data []byte) error {
	if s.state == done || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	s.ev.reset()
	if err := s.dec.decode(data, &s.ev); err != nil {
		return err
	}
	switch string(s.ev.Type) {
	case `"message_start"`:
		return s.start()
	case `"error"`:
		s.failed()
		return nil
	}
	if s.state == awaitingStart {
		return nil // nothing can be framed before the response id is known
	}
	switch string(s.ev.Type) {
	case `"content_block_start"`:
		s.blockStart()
	case `"content_block_delta"`:
		s.blockDelta()
	case `"content_block_stop"`:
		return s.blockStop()
	case `"message_delta"`:
		s.usage.Read(s.ev.Usage)
		if isJSONString(s.ev.Delta.StopReason) {
			s.stop = append(s.stop[:0], s.ev.Delta.StopReason...)
			s.state = finishing
		}
	case `"message_stop"`:
		if s.state == finishing {
			s.appendFinal()
		}
	}
	return nil // ping and unknown events carry nothing
}

func (s *anthropicToResponsesStream) start() error {
	if s.state != awaitingStart {
		return nil
	}
	if !isJSONString(s.ev.Message.ID) {
		return errors.New("message_start without a message id")
	}
	s.usage.Read(s.ev.Message.Usage)
	s.model = servedModel(s.model, s.ev.Message.Model)
	id := s.ev.Message.ID[1 : len(s.ev.Message.ID)-1]
	s.base = append(s.base[:0], bytes.TrimPrefix(id, []byte("msg_"))...)
	s.created = now().Unix()
	s.state = streaming
	s.announce()
	return nil
}

// announce opens the response: response.created and response.in_progress,
// the events every Responses stream begins with, a failed one too.
func (s *anthropicToResponsesStream) announce() {
	for _, name := range [...]string{"response.created", "response.in_progress"} {
		s.begin(name)
		s.out = append(s.out, `,"response":`...)
		s.appendResponse("in_progress")
		s.end()
	}
}

// blockStart opens the output item of a content block.
func (s *anthropicToResponsesStream) blockStart() {
	cb := &s.ev.ContentBlock
	s.text, s.sig, s.summary = s.text[:0], s.sig[:0], false
	s.index, s.next = s.next, s.next+1
	switch string(cb.Type) {
	case `"text"`:
		s.open(itemMessage, "msg_")
		s.out = append(s.out, `,"status":"in_progress","role":"assistant","content":[]}`...)
		s.end()
		s.begin("response.content_part.added")
		s.appendItemRef()
		s.out = append(s.out, `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`...)
		s.end()
	case `"thinking"`, `"redacted_thinking"`:
		kind := itemReasoning
		if string(cb.Type) == `"redacted_thinking"` {
			kind = itemRedacted
			s.text = append(s.text, unquote(cb.Data)...)
		}
		s.open(kind, "rs_")
		s.out = append(s.out, `,"summary":[]}`...)
		s.end()
	case `"tool_use"`:
		s.callID = append(s.callID[:0], cb.ID...)
		s.name = append(s.name[:0], cb.Name...)
		if s.isCustom(string(unquote(cb.Name))) {
			s.open(itemCustom, "ctc_")
			s.out = append(s.out, `,"status":"in_progress"`...)
			s.appendCall(`,"input":""}`)
		} else {
			s.open(itemFunction, "fc_")
			s.out = append(s.out, `,"status":"in_progress"`...)
			s.appendCall(`,"arguments":""}`)
		}
		s.end()
	default: // server tools and other blocks have no output item here
		s.kind, s.next = itemNone, s.index
	}
}

// blockDelta forwards a delta to the open item.
func (s *anthropicToResponsesStream) blockDelta() {
	d := &s.ev.Delta
	switch {
	case s.kind == itemMessage && isJSONString(d.Text):
		s.text = append(s.text, unquote(d.Text)...)
		s.begin("response.output_text.delta")
		s.appendItemRef()
		s.out = append(s.out, `,"content_index":0,"delta":`...)
		s.out = append(s.out, d.Text...)
		s.out = append(s.out, `,"logprobs":[]`...)
		s.end()
	case s.kind == itemReasoning && isJSONString(d.Thinking):
		if !s.summary {
			s.summary = true
			s.begin("response.reasoning_summary_part.added")
			s.appendItemRef()
			s.out = append(s.out, `,"summary_index":0,"part":{"type":"summary_text","text":""}`...)
			s.end()
		}
		s.text = append(s.text, unquote(d.Thinking)...)
		s.begin("response.reasoning_summary_text.delta")
		s.appendItemRef()
		s.out = append(s.out, `,"summary_index":0,"delta":`...)
		s.out = append(s.out, d.Thinking...)
		s.end()
	case s.kind == itemReasoning && isJSONString(d.Signature):
		s.sig = append(s.sig, unquote(d.Signature)...)
	case (s.kind == itemFunction || s.kind == itemCustom) && isJSONString(d.PartialJSON):
		s.text = append(s.text, unquote(d.PartialJSON)...)
		if s.kind == itemCustom {
			return // a custom call's input is given whole at its end
		}
		s.begin("response.function_call_arguments.delta")
		s.appendItemRef()
		s.out = append(s.out, `,"delta":`...)
		s.out = append(s.out, d.PartialJSON...)
		s.end()
	}
}

// blockStop finishes the open item: its done events, then
// output_item.done with the whole item, kept for the terminal event.
func (s *anthropicToResponsesStream) blockStop() error {
	var err error
	switch s.kind {
	case itemNone:
		return nil
	case itemMessage:
		s.textDone()
	case itemReasoning, itemRedacted:
		s.reasoningDone()
	case itemFunction:
		s.argumentsDone()
	case itemCustom:
		err = s.customDone()
	}
	s.kind = itemNone
	return err
}

// unquote is the contents of a raw JSON string, still escaped.
func unquote(raw []byte) []byte {
	if !isJSONString(raw) {
		return nil
	}
	return raw[1 : len(raw)-1]
}
