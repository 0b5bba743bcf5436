package fakeprovider

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// minMaxOutputTokens is the smallest max_output_tokens the Responses API takes.
const minMaxOutputTokens = 16

// responseTurn is a whole Responses API answer, decided before the first byte.
type responseTurn struct {
	id, model    string
	createdAt    int64
	instructions string
	maxOutput    int // -1: not set
	effort       string
	// summary is the reasoning summary asked for ("" for none); store and
	// sealed echo store and whether include asked for encrypted reasoning.
	summary       string
	store, sealed bool
	// tools, toolChoice and format are echoed back as the request sent them.
	tools, toolChoice, format json.RawMessage
	items                     []responseItem
	incomplete                bool
	usage                     openAIUsage
}

// responseItem is one output item: reasoning, a message, a function call
// or a custom tool call.
type responseItem struct {
	kind   string
	id     string
	rep    reply     // message; reasoning's summary
	call   *toolCall // function_call, custom_tool_call
	callID string
	// sealed is a reasoning item's encrypted_content, "" when not asked for.
	sealed string
}

// POST /v1/responses
func (x *exchange) responses() {
	req, ok := x.request()
	if !ok {
		return
	}
	t, err := x.newResponseTurn(req)
	if err != nil {
		x.fail(err)
		return
	}
	x.billOpenAI(t.model, t.usage)
	if req.Stream {
		x.streamResponse(t)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	*buf = t.appendResponse((*buf)[:0], true)
	x.writeBody(200, *buf)
}

func validateResponsesRequest(req *wireRequest) *apiError {
	switch {
	case req.Model == "":
		return badRequest("you must provide a model parameter", "")
	case !present(req.Input):
		return badRequest("Missing required parameter: 'input'.", "input")
	case req.StreamOptions != nil && req.StreamOptions.IncludeUsage != nil:
		// Responses takes a stream_options object, but not this member
		// of chat's: it refuses the request rather than ignore it.
		return badRequest("Unknown parameter: 'stream_options.include_usage'.", "stream_options.include_usage")
	case req.MaxOutputTokens != nil && *req.MaxOutputTokens < minMaxOutputTokens:
		return badRequest("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= "+
			strconv.Itoa(minMaxOutputTokens)+", but got "+strconv.Itoa(*req.MaxOutputTokens)+" instead.", "max_output_tokens")
	}
	return nil
}

func (x *exchange) newResponseTurn(req *wireRequest) (*responseTurn, *apiError) {
	if err := validateResponsesRequest(req); err != nil {
		return nil, err
	}
	conv, err := req.responsesConversation()
	if err != nil {
		return nil, badRequest(err.Error(), "input")
	}
	format, rawFormat, apiErr := req.responsesFormat(&conv)
	if apiErr != nil {
		return nil, apiErr
	}
	store := req.Store == nil || *req.Store
	if err := checkReasoningReplay(req.replayedReasoning(), store); err != nil {
		return nil, err
	}
	call, _, err := req.toolCall(conv.afterToolResult)
	if err != nil {
		return nil, badRequest(err.Error(), "tool_choice")
	}
	s := x.s
	t := &responseTurn{
		id: s.newID("resp_"), model: req.Model, createdAt: time.Now().Unix(),
		instructions: req.Instructions, maxOutput: firstSet(req.MaxOutputTokens),
		tools: req.Tools, toolChoice: req.ToolChoice, format: rawFormat,
		usage: newOpenAIUsage(conv.textBytes, x.usage.Split),
		store: store, sealed: slices.Contains(req.Include, "reasoning.encrypted_content"),
	}
	if req.Reasoning != nil {
		t.effort, t.summary = req.Reasoning.Effort, req.Reasoning.Summary
	}
	reasoning, limit := x.usage.reasoningBudget(t.effort, t.maxOutput)
	if reasoning > 0 {
		t.items = append(t.items, t.reasoningItem(s.newID("rs_"), conv.lastUser))
	}
	t.usage.reasoning = reasoning
	t.usage.completion = reasoning
	if call != nil {
		it := responseItem{kind: "function_call", id: s.newID("fc_"), call: call, callID: s.newID("call_")}
		if call.freeform {
			it.kind, it.id = "custom_tool_call", s.newID("ctc_")
		}
		t.items = append(t.items, it)
		t.usage.completion += call.tokens()
		return t, nil
	}
	rep := format.reply(conv.lastUser, nil, limit)
	// Reasoning that spends the whole budget leaves no message at all.
	if rep.tokens() > 0 || !rep.truncated {
		t.items = append(t.items, responseItem{kind: "message", id: s.newID("msg_"), rep: rep})
	}
	t.incomplete = rep.truncated
	t.usage.completion += rep.tokens()
	return t, nil
}

// reasoningItem is the reasoning the answer shows: a summary when one was
// asked for, its encrypted content when include asked for that.
func (t *responseTurn) reasoningItem(id, lastUser string) responseItem {
	it := responseItem{kind: "reasoning", id: id}
	if t.summary != "" {
		it.rep = newReply(thinkingText(lastUser), nil, -1, pieces)
	}
	if t.sealed {
		it.sealed = encryptedReasoning(id)
	}
	return it
}

func (t *responseTurn) status() string {
	if t.incomplete {
		return "incomplete"
	}
	return "completed"
}

// appendResponse writes the response object: final with its output and
// usage, otherwise as response.created shows it, in progress and empty.
func (t *responseTurn) appendResponse(b []byte, final bool) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, t.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = appendInt(b, int(t.createdAt))
	status := "in_progress"
	if final {
		status = t.status()
	}
	b = append(b, `,"status":`...)
	b = appendString(b, status)
	b = append(b, `,"background":false,"error":null,"incomplete_details":`...)
	if final && t.incomplete {
		b = append(b, `{"reason":"max_output_tokens"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"instructions":`...)
	b = appendStringOrNull(b, t.instructions)
	b = append(b, `,"max_output_tokens":`...)
	if t.maxOutput >= 0 {
		b = appendInt(b, t.maxOutput)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = appendString(b, t.model)
	b = append(b, `,"output":[`...)
	if final {
		for i := range t.items {
			if i > 0 {
				b = append(b, ',')
			}
			b = t.items[i].appendItem(b, true)
		}
	}
	b = append(b, `],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":`...)
	b = appendStringOrNull(b, t.effort)
	b = append(b, `,"summary":`...)
	b = appendStringOrNull(b, t.summary)
	b = append(b, `},"service_tier":"default","store":`...)
	b = strconv.AppendBool(b, t.store)
	b = append(b, `,"temperature":1.0,"text":{"format":`...)
	b = appendRawOr(b, t.format, `{"type":"text"}`)
	b = append(b, `,"verbosity":"medium"},"tool_choice":`...)
	b = appendRawOr(b, t.toolChoice, `"auto"`)
	b = append(b, `,"tools":`...)
	b = appendRawOr(b, t.tools, `[]`)
	b = append(b, `,"top_p":1.0,"truncation":"disabled","usage":`...)
	if final {
		b = appendResponsesUsage(b, t.usage)
	} else {
		b = append(b, "null"...)
	}
	return append(b, `,"metadata":{}}`...)
}

// appendRawOr appends raw JSON the request sent, or def when it sent none.
func appendRawOr(b []byte, raw json.RawMessage, def string) []byte {
	if present(raw) {
		return append(b, raw...)
	}
	return append(b, def...)
}

// appendItem writes an output item: done as the final output shows it,
// otherwise as output_item.added announces it.
func (it *responseItem) appendItem(b []byte, done bool) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, it.id)
	switch it.kind {
	case "reasoning":
		return it.appendReasoning(b, done)
	case "custom_tool_call":
		return it.appendCustomCall(b, done)
	case "function_call":
		b = append(b, `,"type":"function_call","status":`...)
		args := ""
		if done {
			b = append(b, `"completed"`...)
			args = it.call.arguments
		} else {
			b = append(b, `"in_progress"`...)
		}
		b = append(b, `,"arguments":`...)
		b = appendString(b, args)
		b = append(b, `,"call_id":`...)
		b = appendString(b, it.callID)
		b = append(b, `,"name":`...)
		b = appendString(b, it.call.name)
		return append(b, '}')
	}
	b = append(b, `,"type":"message","status":`...)
	switch {
	case !done:
		b = append(b, `"in_progress"`...)
	case it.rep.truncated:
		b = append(b, `"incomplete"`...)
	default:
		b = append(b, `"completed"`...)
	}
	b = append(b, `,"role":"assistant","content":[`...)
	if done {
		b = appendOutputText(b, it.rep.text)
	}
	return append(b, "]}"...)
}

func appendOutputText(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	b = appendString(b, text)
	return append(b, '}')
}
