package fakeprovider

import (
	"strconv"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

const systemFingerprint = "fp_fakeprovider"

// openAIHead is what chat and legacy completion objects and chunks share.
type openAIHead struct {
	id, model string
	created   int64
	usage     openAIUsage
	// includeUsage is stream_options.include_usage.
	includeUsage bool
	// streamUsage places the usage in a chat stream; legacy completions
	// keep OpenAI's rule.
	streamUsage ChatStreamUsage
}

func (s *Server) newOpenAIHead(idPrefix string, req *wireRequest) openAIHead {
	return openAIHead{
		id:           s.newID(idPrefix),
		model:        req.Model,
		created:      time.Now().Unix(),
		includeUsage: req.StreamOptions.includeUsage(),
	}
}

// chatTurn is a whole Chat Completions answer, decided before the first byte.
type chatTurn struct {
	openAIHead
	n   int
	rep reply
	// call, when set, replaces the text in every choice.
	call    *toolCall
	callIDs []string
	finish  string
	// perChoice is the visible tokens of each choice, reasoning apart.
	perChoice int
	// usageDetails adds the prompt/completion breakdowns to the usage.
	usageDetails bool
}

// POST /v1/chat/completions
func (x *exchange) chatCompletions() {
	req, ok := x.request()
	if !ok {
		return
	}
	t, err := x.newChatTurn(req)
	if err != nil {
		x.fail(err)
		return
	}
	x.billOpenAI(t.model, t.usage)
	if req.Stream {
		x.streamChat(t)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	*buf = t.appendCompletion((*buf)[:0])
	x.writeBody(200, *buf)
}

func validateChatRequest(req *wireRequest) *apiError {
	switch {
	case req.Model == "":
		return badRequest("you must provide a model parameter", "")
	case len(req.Messages) == 0:
		return badRequest("Missing required parameter: 'messages'.", "messages")
	case req.StreamOptions != nil && !req.Stream:
		return badRequest("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
	}
	return nil
}

func (x *exchange) newChatTurn(req *wireRequest) (*chatTurn, *apiError) {
	if err := validateChatRequest(req); err != nil {
		return nil, err
	}
	t := &chatTurn{openAIHead: x.s.newOpenAIHead("chatcmpl-", req), usageDetails: !x.dropped(plan.CapUsageDetails)}
	t.streamUsage = x.usage.ChatStream
	n, apiErr := x.choiceCount(req)
	if apiErr != nil {
		return nil, apiErr
	}
	t.n = n
	stops, err := req.stops()
	if err != nil {
		return nil, badRequest(err.Error(), "stop")
	}
	conv, err := req.messagesConversation()
	if err != nil {
		return nil, badRequest(err.Error(), "messages")
	}
	format, apiErr := x.chatFormat(req, &conv)
	if apiErr != nil {
		return nil, apiErr
	}
	call, choice, err := x.toolCall(req, conv.afterToolResult)
	if err != nil {
		return nil, badRequest(err.Error(), "tool_choice")
	}
	t.call = call
	if apiErr := x.hearAudio(&conv); apiErr != nil {
		return nil, apiErr
	}
	reasoning, limit := 0, firstSet(req.MaxCompletionTokens, req.MaxTokens)
	if !x.dropped(plan.CapExtendedThinking) {
		reasoning, limit = x.usage.reasoningBudget(req.ReasoningEffort, limit)
	}
	t.rep = format.reply(conv.lastUser, stops, limit)
	t.usage = x.chatUsage(&conv)
	t.perChoice, t.finish = t.rep.tokens(), t.rep.finish()
	if call != nil {
		t.perChoice = t.answerWithCall(x.s, choice)
	}
	t.usage.completion = n * (t.perChoice + reasoning)
	t.usage.reasoning = n * reasoning
	return t, nil
}

// chatFormat reads response_format, which a server dropping structured
// output ignores.
func (x *exchange) chatFormat(req *wireRequest, conv *conversation) (outputFormat, *apiError) {
	if x.dropped(plan.CapStructuredOutput) {
		return outputFormat{kind: formatText}, nil
	}
	f, err := readFormat(req.ResponseFormat, "response_format", true)
	if err == nil {
		err = f.requireJSONWord(conv, "messages", "response_format", "messages")
	}
	return f, err
}

// choiceCount returns n: 1..128 for OpenAI, exactly 1 on a server dropping
// multiple choices (Anthropic's compatible layer among them).
func (x *exchange) choiceCount(req *wireRequest) (int, *apiError) {
	n, err := req.choiceCount()
	switch {
	case err != nil:
		return 0, badRequest(err.Error(), "n")
	case x.dropped(plan.CapMultiChoice) && n != 1:
		return 0, badRequest("n: only n=1 is supported, got "+strconv.Itoa(n), "n")
	}
	return n, nil
}

// answerWithCall makes every choice the tool call t.call and returns its
// tokens per choice.
func (t *chatTurn) answerWithCall(s *Server, choice toolChoice) int {
	// OpenAI's quirk: a call forced by name finishes with "stop".
	t.finish = "tool_calls"
	if choice.mode == choiceNamed {
		t.finish = "stop"
	}
	for range t.n {
		t.callIDs = append(t.callIDs, s.newID("call_"))
	}
	return t.call.tokens()
}

func (t *chatTurn) appendCompletion(b []byte) []byte {
	b = t.appendHeader(b, "chat.completion")
	for i := range t.n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, i)
		b = append(b, `,"message":{"role":"assistant","content":`...)
		if t.call != nil {
			b = append(b, `null,"refusal":null,"annotations":[],"tool_calls":[{"id":`...)
			b = appendString(b, t.callIDs[i])
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, t.call.name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, t.call.arguments)
			b = append(b, `}}]`...)
		} else {
			b = appendString(b, t.rep.text)
			b = append(b, `,"refusal":null,"annotations":[]`...)
		}
		b = append(b, `},"logprobs":null,"finish_reason":`...)
		b = appendString(b, t.finish)
		b = append(b, '}')
	}
	b = append(b, `],"usage":`...)
	b = appendChatUsage(b, t.usage, t.usageDetails)
	return append(b, '}')
}

// appendHeader writes the fields every completion object and chunk starts
// with, up to the opening of "choices".
func (t *openAIHead) appendHeader(b []byte, object string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, t.id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = appendInt(b, int(t.created))
	b = append(b, `,"model":`...)
	b = appendString(b, t.model)
	b = append(b, `,"service_tier":"default","system_fingerprint":"`+systemFingerprint+`","choices":[`...)
	return b
}

// streamChat sends the answer as chat.completion.chunk events: a role delta,
// one delta per piece (or argument fragment), a finish chunk per choice,
// then, with include_usage, a usage chunk with no choices, and [DONE].
// Without include_usage the chunks carry no usage at all, as OpenAI's do;
// the stream's Usage mode may place it elsewhere (closeChunk).
func (x *exchange) streamChat(t *chatTurn) {
	st := x.startStream()
	defer st.close()
	header := t.appendHeader(nil, "chat.completion.chunk")
	deltas := t.rep.pieces
	if t.call != nil {
		deltas = fragments(t.call.arguments, argumentFragment)
	}
	for step := 0; step <= len(deltas)+1; step++ {
		for i := range t.n {
			b := append(st.begin(""), header...)
			b = t.appendChunkChoice(b, i, step, deltas)
			b = t.closeChunk(b, i, step, len(deltas))
			if st.sendKind(b, step >= 1 && step <= len(deltas)) != nil {
				return
			}
		}
	}
	t.endStream(st, header, t.usageDetails)
}

// trailer closes a chunk after its choices: chunks carry "usage":null only
// when the final usage chunk is coming.
func (t *openAIHead) trailer() string {
	if t.includeUsage {
		return `],"usage":null}`
	}
	return "]}"
}

// endStream sends the usage chunk, when asked for and the mode has not
// placed the usage already, and [DONE].
func (t *openAIHead) endStream(st *stream, header []byte, details bool) {
	if t.includeUsage && t.streamUsage == UsageChunk {
		b := append(st.begin(""), header...)
		b = append(b, `],"usage":`...)
		b = appendChatUsage(b, t.usage, details)
		if st.send(append(b, '}')) != nil {
			return
		}
	}
	_ = st.sendTerminal(append(st.begin(""), "[DONE]"...))
}

// closeChunk ends chunk step of choice i, of a stream with deltas content
// chunks a choice, with the usage the stream's mode puts there: the running
// count on every chunk, or the final one on the chunk finishing the last
// choice.
func (t *chatTurn) closeChunk(b []byte, i, step, deltas int) []byte {
	var u openAIUsage
	switch {
	case t.streamUsage == UsageEveryChunk:
		u = t.usage
		u.completion = u.reasoning + (i+1)*streamed(t.perChoice, step, deltas) + (t.n-1-i)*streamed(t.perChoice, step-1, deltas)
	case t.streamUsage == UsageWithLastChoice && step == deltas+1 && i == t.n-1:
		u = t.usage
	default:
		return append(b, t.trailer()...)
	}
	b = append(b, `],"usage":`...)
	b = appendChatUsage(b, u, t.usageDetails)
	return append(b, '}')
}

// streamed is how many of a choice's total visible tokens it has sent by
// chunk step, its deltas going out in chunks 1 to deltas; the reasoning is
// billed before the first.
func streamed(total, step, deltas int) int {
	if step <= 0 || deltas == 0 {
		return 0
	}
	return total * min(step, deltas) / deltas
}

// appendChunkChoice writes choice i of chunk step: 0 is the role delta, the
// last is the finish, the ones between carry deltas[step-1].
func (t *chatTurn) appendChunkChoice(b []byte, i, step int, deltas []string) []byte {
	b = append(b, `{"index":`...)
	b = appendInt(b, i)
	b = append(b, `,"delta":{`...)
	switch {
	case step == 0 && t.call != nil:
		b = append(b, `"role":"assistant","content":null,"tool_calls":[{"index":0,"id":`...)
		b = appendString(b, t.callIDs[i])
		b = append(b, `,"type":"function","function":{"name":`...)
		b = appendString(b, t.call.name)
		b = append(b, `,"arguments":""}}],"refusal":null`...)
	case step == 0:
		b = append(b, `"role":"assistant","content":"","refusal":null`...)
	case step <= len(deltas) && t.call != nil:
		b = append(b, `"tool_calls":[{"index":0,"function":{"arguments":`...)
		b = appendString(b, deltas[step-1])
		b = append(b, `}}]`...)
	case step <= len(deltas):
		b = append(b, `"content":`...)
		b = appendString(b, deltas[step-1])
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	if step == len(deltas)+1 {
		b = appendString(b, t.finish)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}
