package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/pistra/pistra/runtime/meter"
)

// respEvent is the reused decode target for one Responses stream event.
// Raw fields are copied verbatim into Anthropic frames.
type respEvent struct {
	Type         json.RawMessage `json:"type"`
	Delta        json.RawMessage `json:"delta"`
	Arguments    json.RawMessage `json:"arguments"`
	SummaryIndex int             `json:"summary_index"`
	Item         struct {
		Type             json.RawMessage `json:"type"`
		ID               json.RawMessage `json:"id"`
		CallID           json.RawMessage `json:"call_id"`
		Name             json.RawMessage `json:"name"`
		EncryptedContent json.RawMessage `json:"encrypted_content"`
	} `json:"item"`
	Response struct {
		ID                json.RawMessage `json:"id"`
		Model             json.RawMessage `json:"model"`
		IncompleteDetails struct {
			Reason json.RawMessage `json:"reason"`
		} `json:"incomplete_details"`
		Error struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		} `json:"error"`
		Usage json.RawMessage `json:"usage"`
	} `json:"response"`
	Code    json.RawMessage `json:"code"` // an error event's
	Message string          `json:"message"`
}

func (e *respEvent) reset() {
	for _, raw := range [...]*json.RawMessage{
		&e.Type, &e.Delta, &e.Arguments, &e.Item.Type, &e.Item.ID, &e.Item.CallID, &e.Item.Name,
		&e.Item.EncryptedContent, &e.Response.ID, &e.Response.Model, &e.Response.IncompleteDetails.Reason,
		&e.Response.Error.Code, &e.Response.Usage, &e.Code,
	} {
		*raw = (*raw)[:0]
	}
	e.SummaryIndex, e.Message, e.Response.Error.Message = 0, "", ""
}

// blockKind is what the open Anthropic content block is.
type blockKind uint8

const (
	blockNone blockKind = iota
	blockText
	blockThinking
	blockTool
)

// responsesToAnthropicStream turns a Responses event stream into an
// Anthropic event stream.
type responsesToAnthropicStream struct {
	streamCore
	model []byte // the client model, JSON-encoded
	dec   eventDecoder
	ev    respEvent
	usage meter.UsageReader

	open      blockKind
	index     int  // the open block's index
	nextBlock int  // the next block's index
	args      bool // the open tool block has had argument deltas
	calls     bool
	refused   bool
	stop      string
}

// NewResponsesToAnthropicStream returns a Stream that reads a Responses
// event stream and writes Anthropic Messages events to w, for an Anthropic
// client. clientModel goes into message_start unless response.created
// names the model that served.
//
// response.created becomes message_start (with zero usage: Responses
// reports usage only at the end); output text and refusal deltas become a
// text block, reasoning summary and reasoning text deltas a thinking block
// whose signature, sent as signature_delta just before its stop, packs the
// item's id and encrypted_content; function calls become tool_use blocks
// with argument deltas (or the whole arguments, from a server that sends
// only the done event). The terminal event becomes one message_delta with
// the stop reason and the whole usage, then message_stop; response.failed
// and error events become an error event. Every event has its event: line.
func NewResponsesToAnthropicStream(w io.Writer, clientModel string) Stream {
	model, _ := json.Marshal(clientModel) // a string: cannot fail
	s := &responsesToAnthropicStream{model: model}
	s.usage.Reset(meter.ShapeResponses)
	s.streamCore = streamCore{w: w, frames: s}
	return s
}

func (s *responsesToAnthropicStream) Usage() meter.Usage { return s.usage.Usage() }

// Event handles one upstream event; it implements sse.Handler.
func (s *responsesToAnthropicStream) Event(data []byte) error {
	if s.state == done || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	s.ev.reset()
	if err := s.dec.decode(data, &s.ev); err != nil {
		return err
	}
	switch string(s.ev.Type) {
	case `"response.created"`:
		return s.start()
	case `"error"`:
		s.fail(s.ev.Code, s.ev.Message)
		return nil
	case `"response.failed"`:
		s.usage.Read(s.ev.Response.Usage)
		s.fail(s.ev.Response.Error.Code, s.ev.Response.Error.Message)
		return nil
	}
	if s.state != streaming {
		return nil // nothing can be framed before the message id is known
	}
	s.item()
	switch string(s.ev.Type) {
	case `"response.completed"`, `"response.incomplete"`, `"response.done"`:
		s.usage.Read(s.ev.Response.Usage)
		s.closeBlock()
		s.stop = antStopReason(s.incomplete(), s.calls, s.refused)
		s.state = finishing
		s.appendFinal()
	}
	return nil
}

func (s *responsesToAnthropicStream) start() error {
	if s.state != awaitingStart {
		return nil
	}
	if !isJSONString(s.ev.Response.ID) {
		return errors.New("response.created without a response id")
	}
	s.model = servedModel(s.model, s.ev.Response.Model)
	s.beginEvent("message_start")
	s.out = append(s.out, `{"type":"message_start","message":{"id":"msg_`...)
	s.out = append(s.out, bytes.TrimPrefix(unquote(s.ev.Response.ID), []byte("resp_"))...)
	s.out = append(s.out, `","type":"message","role":"assistant","model":`...)
	s.out = append(s.out, s.model...)
	s.out = append(s.out, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`...)
	s.endEvent()
	s.state = streaming
	return nil
}

// item translates the item and delta events.
func (s *responsesToAnthropicStream) item() {
	ev := &s.ev
	switch string(ev.Type) {
	case `"response.output_item.added"`:
		s.itemAdded()
	case `"response.output_text.delta"`, `"response.refusal.delta"`:
		s.refused = s.refused || string(ev.Type) == `"response.refusal.delta"`
		if s.open != blockText {
			s.openBlock(blockText, `{"type":"text","text":""}`)
		}
		s.delta(`{"type":"text_delta","text":`, ev.Delta)
	case `"response.content_part.done"`:
		if s.open == blockText {
			s.closeBlock()
		}
	case `"response.reasoning_summary_part.added"`:
		if s.open == blockThinking && ev.SummaryIndex > 0 {
			s.delta(`{"type":"thinking_delta","thinking":`, []byte(`"\n\n"`))
		}
	case `"response.reasoning_summary_text.delta"`, `"response.reasoning_text.delta"`:
		if s.open == blockThinking {
			s.delta(`{"type":"thinking_delta","thinking":`, ev.Delta)
		}
	case `"response.function_call_arguments.delta"`:
		if s.open == blockTool {
			s.args = true
			s.delta(`{"type":"input_json_delta","partial_json":`, ev.Delta)
		}
	case `"response.function_call_arguments.done"`:
		if s.open == blockTool && !s.args && !isEmptyJSONString(ev.Arguments) {
			s.delta(`{"type":"input_json_delta","partial_json":`, ev.Arguments)
		}
	case `"response.output_item.done"`:
		s.itemDone()
	}
}

func (s *responsesToAnthropicStream) itemAdded() {
	it := &s.ev.Item
	switch string(it.Type) {
	case `"reasoning"`:
		s.openBlock(blockThinking, `{"type":"thinking","thinking":"","signature":""}`)
	case `"function_call"`:
		s.calls, s.args = true, false
		s.closeBlock()
		s.beginBlock(blockTool)
		s.out = append(s.out, `{"type":"tool_use","id":`...)
		s.out = appendJSONStringOr(s.out, it.CallID, `""`)
		s.out = append(s.out, `,"name":`...)
		s.out = appendJSONStringOr(s.out, it.Name, `""`)
		s.out = append(s.out, `,"input":{}}}`...)
		s.endEvent()
	}
}

// itemDone closes the item's block; a reasoning item's signature goes
// first, as Claude Code needs it before the block's stop.
func (s *responsesToAnthropicStream) itemDone() {
	it := &s.ev.Item
	if string(it.Type) == `"reasoning"` && s.open == blockThinking && !isEmptyJSONString(it.EncryptedContent) {
		var p packedReasoning
		_ = json.Unmarshal(it.ID, &p.ID) // validated strings, or an absent id
		_ = json.Unmarshal(it.EncryptedContent, &p.EncryptedContent)
		sig, _ := marshal(packReasoning(p.ID, p.EncryptedContent)) // a string: cannot fail
		s.delta(`{"type":"signature_delta","signature":`, sig)
	}
	s.closeBlock()
}

// incomplete is the terminal response's incomplete_details, nil when it
// has none.
func (s *responsesToAnthropicStream) incomplete() *respIncomplete {
	var reason string
	if json.Unmarshal(s.ev.Response.IncompleteDetails.Reason, &reason) != nil || reason == "" {
		return nil
	}
	return &respIncomplete{Reason: reason}
}
