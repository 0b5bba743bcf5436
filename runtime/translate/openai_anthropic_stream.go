package translate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/pistra/pistra/runtime/meter"
)

// antEvent is the reused decode target for one Anthropic stream event. Its
// raw fields are copied verbatim into OpenAI frames, so a text delta costs no
// string decode and no allocation once the buffers have grown.
type antEvent struct {
	Type    json.RawMessage `json:"type"`
	Index   int             `json:"index"`
	Message struct {
		ID    json.RawMessage `json:"id"`
		Model json.RawMessage `json:"model"`
		Usage json.RawMessage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type json.RawMessage `json:"type"`
		ID   json.RawMessage `json:"id"`
		Name json.RawMessage `json:"name"`
		Data json.RawMessage `json:"data"` // redacted_thinking
	} `json:"content_block"`
	Delta struct {
		Type        json.RawMessage `json:"type"`
		Text        json.RawMessage `json:"text"`
		PartialJSON json.RawMessage `json:"partial_json"`
		Thinking    json.RawMessage `json:"thinking"`
		Signature   json.RawMessage `json:"signature"`
		StopReason  json.RawMessage `json:"stop_reason"`
	} `json:"delta"`
	Usage json.RawMessage `json:"usage"`
	Error antErrorBody    `json:"error"`
}

// reset clears e for the next event, keeping its buffers: the decoder leaves
// absent fields as they were.
func (e *antEvent) reset() {
	for _, raw := range [...]*json.RawMessage{
		&e.Type, &e.Message.ID, &e.ContentBlock.Type, &e.ContentBlock.ID, &e.ContentBlock.Name,
		&e.ContentBlock.Data, &e.Delta.Type, &e.Delta.Text, &e.Delta.PartialJSON, &e.Delta.StopReason,
		&e.Delta.Thinking, &e.Delta.Signature,
		&e.Message.Usage, &e.Usage,
	} {
		*raw = (*raw)[:0]
	}
	e.Index = 0
	e.Error = antErrorBody{}
}

// toolSlot ties an Anthropic content block to an OpenAI tool call index.
type toolSlot struct{ block, call int }

// anthropicToOpenAIStream turns an Anthropic event stream into chat
// completion chunks.
type anthropicToOpenAIStream struct {
	streamCore
	model        []byte // the client model, JSON-encoded
	includeUsage bool
	dec          eventDecoder
	ev           antEvent
	prefix       []byte // every chunk's opening, up to and including "choices":[
	tools        []toolSlot
	usage        meter.UsageReader // Anthropic usage, overwritten count by count
}

// NewAnthropicToOpenAIStream returns a Stream that reads an Anthropic
// Messages event stream and writes Chat Completions chunks to w, for an
// OpenAI client. clientModel goes into every chunk's model unless
// message_start names the model that served. includeUsage is
// the client's stream_options.include_usage: it decides whether the final
// usage-only chunk is sent (usage is parsed either way).
//
// The first chunk carries the role; text deltas become content, tool_use
// blocks become tool_calls keyed by their order, input_json_delta becomes
// argument fragments. Thinking, signature and citation deltas have no field
// in a chunk and are dropped; ping is ignored. An upstream error event
// becomes an OpenAI error chunk.
func NewAnthropicToOpenAIStream(w io.Writer, clientModel string, includeUsage bool) Stream {
	model, _ := json.Marshal(clientModel) // a string: cannot fail
	s := &anthropicToOpenAIStream{model: model, includeUsage: includeUsage}
	s.usage.Reset(meter.ShapeMessages)
	s.streamCore = streamCore{w: w, frames: s}
	return s
}

func (s *anthropicToOpenAIStream) Usage() meter.Usage { return s.usage.Usage() }

// Event handles one upstream event; it implements sse.Handler.
func (s *anthropicToOpenAIStream) Event(data []byte) error {
	if s.state == done || len(bytes.TrimSpace(data)) == 0 {
		return nil // an empty event carries nothing to translate
	}
	s.ev.reset()
	if err := s.dec.decode(data, &s.ev); err != nil {
		return err
	}
	switch string(s.ev.Type) {
	case `"message_start"`:
		return s.start()
	case `"error"`:
		s.appendError(s.ev.Error.Message, s.ev.Error.Type)
		s.reportUpstream(s.ev.Error.Type, s.ev.Error.Message)
		return nil
	}
	if s.state == awaitingStart {
		return nil // nothing can be framed before the message id is known
	}
	switch string(s.ev.Type) {
	case `"content_block_start"`:
		return s.blockStart()
	case `"content_block_delta"`:
		s.blockDelta()
	case `"message_delta"`:
		s.usage.Read(s.ev.Usage)
		s.messageDelta()
	case `"message_stop"`:
		if s.state == streaming {
			s.finishChunk("stop") // OpenAI clients require a finish reason
		}
		s.appendFinal()
	}
	return nil // ping, content_block_stop and unknown events carry nothing
}

// start handles message_start: the chunk prefix and the role chunk.
func (s *anthropicToOpenAIStream) start() error {
	if s.state != awaitingStart {
		return nil
	}
	if !isJSONString(s.ev.Message.ID) {
		return errors.New("message_start without a message id")
	}
	s.usage.Read(s.ev.Message.Usage)
	s.model = servedModel(s.model, s.ev.Message.Model)
	s.prefix = append(s.prefix[:0], `{"id":`...)
	s.prefix = append(s.prefix, s.ev.Message.ID...)
	s.prefix = append(s.prefix, `,"object":"chat.completion.chunk","created":`...)
	s.prefix = strconv.AppendInt(s.prefix, now().Unix(), 10)
	s.prefix = append(s.prefix, `,"model":`...)
	s.prefix = append(s.prefix, s.model...)
	s.prefix = append(s.prefix, `,"choices":[`...)
	s.state = streaming
	s.beginChunk()
	s.out = append(s.out, `{"role":"assistant","content":""}`...)
	s.endChunk(nil)
	return nil
}

// blockStart opens a tool call for a tool_use block; other blocks open
// nothing an OpenAI client sees.
func (s *anthropicToOpenAIStream) blockStart() error {
	cb := &s.ev.ContentBlock
	if string(cb.Type) != `"tool_use"` {
		return nil
	}
	if !isJSONString(cb.ID) || !isJSONString(cb.Name) {
		return fmt.Errorf("tool_use block %d without an id or name", s.ev.Index)
	}
	call := len(s.tools)
	s.tools = append(s.tools, toolSlot{block: s.ev.Index, call: call})
	s.beginChunk()
	s.out = append(s.out, `{"tool_calls":[{"index":`...)
	s.out = appendInt(s.out, call)
	s.out = append(s.out, `,"id":`...)
	s.out = append(s.out, cb.ID...)
	s.out = append(s.out, `,"type":"function","function":{"name":`...)
	s.out = append(s.out, cb.Name...)
	s.out = append(s.out, `,"arguments":""}}]}`...)
	s.endChunk(nil)
	return nil
}

func (s *anthropicToOpenAIStream) blockDelta() {
	d := &s.ev.Delta
	switch string(d.Type) {
	case `"text_delta"`:
		if isEmptyJSONString(d.Text) {
			return
		}
		s.beginChunk()
		s.out = append(s.out, `{"content":`...)
		s.out = append(s.out, d.Text...)
		s.out = append(s.out, '}')
		s.endChunk(nil)
	case `"input_json_delta"`:
		call, ok := s.toolCall(s.ev.Index)
		if !ok || isEmptyJSONString(d.PartialJSON) {
			return
		}
		s.beginChunk()
		s.out = append(s.out, `{"tool_calls":[{"index":`...)
		s.out = appendInt(s.out, call)
		s.out = append(s.out, `,"function":{"arguments":`...)
		s.out = append(s.out, d.PartialJSON...)
		s.out = append(s.out, `}}]}`...)
		s.endChunk(nil)
	}
}

func (s *anthropicToOpenAIStream) toolCall(block int) (int, bool) {
	for _, t := range s.tools {
		if t.block == block {
			return t.call, true
		}
	}
	return 0, false
}

// messageDelta sends the finish chunk once the stop reason is known.
func (s *anthropicToOpenAIStream) messageDelta() {
	stop := s.ev.Delta.StopReason
	if !isJSONString(stop) || s.state != streaming {
		return
	}
	var reason string
	if json.Unmarshal(stop, &reason) != nil {
		return
	}
	s.finishChunk(finishReason(reason))
}

// finishChunk sends the chunk carrying the OpenAI finish reason.
func (s *anthropicToOpenAIStream) finishChunk(reason string) {
	s.beginChunk()
	s.out = append(s.out, `{}`...)
	s.endChunk([]byte(strconv.Quote(reason)))
	s.state = finishing
}

// appendFinal writes the usage chunk (when asked for) and [DONE].
func (s *anthropicToOpenAIStream) appendFinal() {
	if s.includeUsage {
		usage, _ := json.Marshal(openAIUsage(s.Usage())) // numbers only: cannot fail
		s.out = append(s.out, "data: "...)
		s.out = append(s.out, s.prefix...)
		s.out = append(s.out, `],"usage":`...)
		s.out = append(s.out, usage...)
		s.out = append(s.out, "}\n\n"...)
	}
	s.out = append(s.out, "data: [DONE]\n\n"...)
	s.state = done
}

// appendError writes the upstream's error event as an OpenAI error chunk
// and ends the stream. antType is the upstream's error type, which may be
// empty.
func (s *anthropicToOpenAIStream) appendError(message, antType string) {
	s.out = append(s.out, "data: "...)
	s.out = append(s.out, openAIErrorBody(message, cmp.Or(antType, "api_error"), antType)...)
	s.out = append(s.out, "\n\n"...)
	s.state = done
}

func (s *anthropicToOpenAIStream) beginChunk() {
	s.out = append(s.out, "data: "...)
	s.out = append(s.out, s.prefix...)
	s.out = append(s.out, `{"index":0,"delta":`...)
}

// endChunk closes a chunk; finish is a JSON string, or nil for null.
func (s *anthropicToOpenAIStream) endChunk(finish []byte) {
	s.out = append(s.out, `,"logprobs":null,"finish_reason":`...)
	if finish == nil {
		finish = []byte("null")
	}
	s.out = append(s.out, finish...)
	s.out = append(s.out, '}', ']')
	if s.includeUsage {
		// With include_usage every chunk but the last says usage is null.
		s.out = append(s.out, `,"usage":null`...)
	}
	s.out = append(s.out, "}\n\n"...)
}
