package translate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"

	"github.com/pistra/pistra/runtime/meter"
)

// oaiChunk is the reused decode target for one chat.completion.chunk. Raw
// fields are copied verbatim into Anthropic frames.
type oaiChunk struct {
	ID      json.RawMessage  `json:"id"`
	Model   json.RawMessage  `json:"model"`
	Choices []oaiChunkChoice `json:"choices"`
	Usage   json.RawMessage  `json:"usage"`
	Error   json.RawMessage  `json:"error"`
}

type oaiChunkChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content   json.RawMessage `json:"content"`
		Refusal   json.RawMessage `json:"refusal"`
		ToolCalls []oaiToolDelta  `json:"tool_calls"`
	} `json:"delta"`
	FinishReason json.RawMessage `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"` // vLLM: the matched stop string
}

type oaiToolDelta struct {
	Index    int             `json:"index"`
	ID       json.RawMessage `json:"id"`
	Function struct {
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// reset clears c for the next chunk, keeping its buffers. The decoder
// neither clears absent fields nor the slice elements it reuses, so every
// element up to the capacity is cleared.
func (c *oaiChunk) reset() {
	c.ID, c.Usage, c.Error = c.ID[:0], c.Usage[:0], c.Error[:0]
	choices := c.Choices[:cap(c.Choices)]
	for i := range choices {
		ch := &choices[i]
		ch.Index = 0
		ch.Delta.Content, ch.Delta.Refusal = ch.Delta.Content[:0], ch.Delta.Refusal[:0]
		ch.FinishReason, ch.StopReason = ch.FinishReason[:0], ch.StopReason[:0]
		calls := ch.Delta.ToolCalls[:cap(ch.Delta.ToolCalls)]
		for j := range calls {
			t := &calls[j]
			t.Index, t.ID = 0, t.ID[:0]
			t.Function.Name, t.Function.Arguments = t.Function.Name[:0], t.Function.Arguments[:0]
		}
		ch.Delta.ToolCalls = calls[:0]
	}
	c.Choices = choices[:0]
}

// callSlot ties an OpenAI tool call index (and id) to an Anthropic block.
type callSlot struct {
	call  int
	block int
	id    []byte // the raw JSON id, to tell a new call reusing an index apart
}

// openAIToAnthropicStream turns chat completion chunks into an Anthropic
// event stream.
type openAIToAnthropicStream struct {
	streamCore
	model []byte // the client model, JSON-encoded
	dec   eventDecoder
	chunk oaiChunk

	open      int  // index of the open content block, -1 for none
	openText  bool // whether the open block is text
	nextBlock int
	calls     []callSlot

	usage   meter.UsageReader // chat usage
	finish  string
	stopSeq []byte // vLLM's stop_reason, raw
	refused bool
}

// NewOpenAIToAnthropicStream returns a Stream that reads a Chat Completions
// chunk stream and writes Anthropic Messages events to w, for an Anthropic
// client. clientModel goes into message_start's model unless the first
// upstream chunk names the model that served.
//
// message_start is sent on the first chunk with output or usage, with the
// input counts when the upstream has reported them by then; content and refusal deltas open a
// text block, tool_calls fragments open a tool_use block per call (by index,
// or by a new id reusing an index) with arguments as input_json_delta. The
// finish reason closes the open block; message_delta, carrying the stop
// reason and the usage of the final chunk, and message_stop follow at
// [DONE]. Every event has its event: line, which Anthropic SDKs require. An
// upstream error chunk becomes an error event.
func NewOpenAIToAnthropicStream(w io.Writer, clientModel string) Stream {
	model, _ := json.Marshal(clientModel) // a string: cannot fail
	s := &openAIToAnthropicStream{model: model, open: -1}
	s.streamCore = streamCore{w: w, frames: s}
	return s
}

func (s *openAIToAnthropicStream) Usage() meter.Usage { return s.usage.Usage() }

// Event handles one upstream chunk; it implements sse.Handler.
func (s *openAIToAnthropicStream) Event(data []byte) error {
	if s.state == done || len(bytes.TrimSpace(data)) == 0 {
		return nil // an empty event carries nothing to translate
	}
	if string(data) == "[DONE]" {
		if s.state == finishing {
			s.appendFinal()
		}
		return nil // without a finish reason, Close reports the stream incomplete
	}
	s.chunk.reset()
	if err := s.dec.decode(data, &s.chunk); err != nil {
		return err
	}
	if len(s.chunk.Error) > 0 && string(s.chunk.Error) != "null" {
		return s.upstreamError()
	}
	s.usage.Read(s.chunk.Usage) // a whole-request figure: the latest replaces
	if s.state == awaitingStart && (s.chunkHasOutput() || (len(s.chunk.Usage) > 0 && string(s.chunk.Usage) != "null")) {
		s.start()
	}
	for i := range s.chunk.Choices {
		if c := &s.chunk.Choices[i]; c.Index == 0 {
			s.choice(c)
		}
	}
	return nil
}

func (s *openAIToAnthropicStream) upstreamError() error {
	var e oaiErrorBody
	if err := json.Unmarshal(s.chunk.Error, &e); err != nil {
		return err
	}
	var code string
	_ = json.Unmarshal(e.Code, &code) // a code may be null or a number
	s.appendError(anthropicErrorTypeOf(e.Type, code), e.Message)
	s.reportUpstream(cmp.Or(code, e.Type), e.Message)
	return nil
}

func (s *openAIToAnthropicStream) start() {
	id := s.chunk.ID
	if !isJSONString(id) {
		id = []byte(`""`)
	}
	s.model = servedModel(s.model, s.chunk.Model)
	s.beginEvent("message_start")
	s.out = append(s.out, `{"type":"message_start","message":{"id":`...)
	s.out = append(s.out, id...)
	s.out = append(s.out, `,"type":"message","role":"assistant","model":`...)
	s.out = append(s.out, s.model...)
	s.out = append(s.out, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	s.out = appendAnthropicUsage(s.out, anthropicUsage(s.Usage()))
	s.out = append(s.out, "}}"...)
	s.endEvent()
	s.state = streaming
}

// chunkHasOutput reports whether the chunk carries anything of the first
// choice's answer. message_start waits for that (or for usage): a chunk
// of only the role says nothing, and a server that reports usage before
// the output (vLLM's continuous usage) then has its input counted in
// message_start, which some clients read the input from and nothing else.
func (s *openAIToAnthropicStream) chunkHasOutput() bool {
	for i := range s.chunk.Choices {
		c := &s.chunk.Choices[i]
		if c.Index == 0 && (!isEmptyJSONString(c.Delta.Content) || !isEmptyJSONString(c.Delta.Refusal) ||
			len(c.Delta.ToolCalls) > 0 || isJSONString(c.FinishReason)) {
			return true
		}
	}
	return false
}

// choice translates the first choice's delta and finish reason.
func (s *openAIToAnthropicStream) choice(c *oaiChunkChoice) {
	if !isEmptyJSONString(c.Delta.Content) {
		s.textDelta(c.Delta.Content)
	}
	if !isEmptyJSONString(c.Delta.Refusal) {
		s.refused = true
		s.textDelta(c.Delta.Refusal)
	}
	for i := range c.Delta.ToolCalls {
		s.toolDelta(&c.Delta.ToolCalls[i])
	}
	if isJSONString(c.FinishReason) && s.state == streaming {
		s.closeBlock()
		_ = json.Unmarshal(c.FinishReason, &s.finish) // a validated string
		s.stopSeq = append(s.stopSeq[:0], c.StopReason...)
		s.state = finishing
	}
}

func (s *openAIToAnthropicStream) textDelta(text json.RawMessage) {
	if s.open < 0 || !s.openText {
		s.closeBlock()
		s.openBlock(true)
		s.out = append(s.out, `{"type":"text","text":""}}`...)
		s.endEvent()
	}
	s.beginDelta(s.open)
	s.out = append(s.out, `{"type":"text_delta","text":`...)
	s.out = append(s.out, text...)
	s.out = append(s.out, `}}`...)
	s.endEvent()
}

// toolDelta handles one tool_calls fragment. A fragment for a call whose
// block is already closed (OpenAI streams calls one after another, so only a
// nonconforming server does this) is still addressed to that block's index,
// which Anthropic accumulators resolve by index.
func (s *openAIToAnthropicStream) toolDelta(t *oaiToolDelta) {
	slot := s.callSlot(t)
	if slot == nil {
		s.closeBlock()
		s.openBlock(false)
		s.calls = append(s.calls, callSlot{call: t.Index, block: s.open, id: append([]byte(nil), t.ID...)})
		slot = &s.calls[len(s.calls)-1]
		s.out = append(s.out, `{"type":"tool_use","id":`...)
		if !isEmptyJSONString(t.ID) {
			s.out = append(s.out, t.ID...)
		} else {
			// Anthropic requires an id; servers that omit it get one per block.
			s.out = append(s.out, `"call_`...)
			s.out = appendInt(s.out, s.open)
			s.out = append(s.out, '"')
		}
		s.out = append(s.out, `,"name":`...)
		s.out = appendJSONStringOr(s.out, t.Function.Name, `""`)
		s.out = append(s.out, `,"input":{}}}`...)
		s.endEvent()
	}
	if isEmptyJSONString(t.Function.Arguments) {
		return
	}
	s.beginDelta(slot.block)
	s.out = append(s.out, `{"type":"input_json_delta","partial_json":`...)
	s.out = append(s.out, t.Function.Arguments...)
	s.out = append(s.out, `}}`...)
	s.endEvent()
}

// callSlot finds the block of a fragment's call: same index, and the same
// id when the fragment restates one.
func (s *openAIToAnthropicStream) callSlot(t *oaiToolDelta) *callSlot {
	for i := len(s.calls) - 1; i >= 0; i-- {
		c := &s.calls[i]
		if c.call == t.Index {
			if !isEmptyJSONString(t.ID) && string(t.ID) != string(c.id) {
				return nil
			}
			return c
		}
	}
	return nil
}
