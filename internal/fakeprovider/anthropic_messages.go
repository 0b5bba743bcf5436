package fakeprovider

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/pistra/pistra/runtime/plan"
)

const (
	// minThinkingBudget is the smallest thinking.budget_tokens Anthropic takes.
	minThinkingBudget = 1024
	// versionWithoutSampling is the anthropic-version that rejects
	// temperature, top_p and top_k.
	versionWithoutSampling = "2026-10-21"
)

// messageTurn is a whole Messages answer, decided before the first byte.
type messageTurn struct {
	id, model    string
	blocks       []contentBlock
	stopReason   string
	stopSequence string
	usage        anthropicUsage
}

// contentBlock is one block of the answer: thinking, text or tool_use.
type contentBlock struct {
	kind      string
	rep       reply  // thinking and text
	signature string // thinking
	// omitted: the thinking's text is left out (display "omitted"); the
	// signature still carries it.
	omitted bool
	id      string // tool_use
	call    *toolCall
}

func (c *contentBlock) tokens() int {
	if c.call != nil {
		return c.call.tokens()
	}
	return c.rep.tokens()
}

// POST /v1/messages
func (x *exchange) messages() {
	req, ok := x.request()
	if !ok {
		return
	}
	t, err := x.newMessageTurn(req)
	if err != nil {
		x.fail(err)
		return
	}
	u := t.usage
	x.bill(t.model, u.input+u.cacheCreation+u.cacheRead, u.cacheRead, u.cacheCreation, u.output)
	if req.Stream {
		x.streamMessage(t)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	*buf = t.appendMessage((*buf)[:0], true)
	x.writeBody(http.StatusOK, *buf)
}

// POST /v1/messages/count_tokens
func (x *exchange) countTokens() {
	req, ok := x.request()
	if !ok {
		return
	}
	if err := validateMessagesRequest(req, x.r.Header.Get("Anthropic-Version"), false); err != nil {
		x.fail(err)
		return
	}
	conv, err := req.messagesConversation()
	if err != nil {
		x.fail(badRequest(err.Error(), ""))
		return
	}
	b := append([]byte(`{"input_tokens":`), strconv.Itoa(promptTokens(conv.textBytes))...)
	x.writeBody(http.StatusOK, append(b, '}'))
}

// validateMessagesRequest applies the checks Anthropic makes before
// generating: required fields, sampling knobs under the newest version, a
// sound thinking budget.
func validateMessagesRequest(req *wireRequest, version string, needMaxTokens bool) *apiError {
	switch {
	case req.Model == "":
		return badRequest("model: Field required", "")
	case needMaxTokens && req.MaxTokens == nil:
		return badRequest("max_tokens: Field required", "")
	case needMaxTokens && *req.MaxTokens < 1:
		return badRequest("max_tokens: Input should be greater than or equal to 1", "")
	case len(req.Messages) == 0:
		return badRequest("messages: at least one message is required", "")
	}
	if version == versionWithoutSampling {
		knobs := [...]struct {
			name string
			raw  []byte
		}{{"temperature", req.Temperature}, {"top_p", req.TopP}, {"top_k", req.TopK}}
		for _, k := range knobs {
			if present(k.raw) {
				return badRequest(k.name+": not supported with anthropic-version "+versionWithoutSampling, "")
			}
		}
	}
	if needMaxTokens && req.Thinking != nil && req.Thinking.Type == "enabled" {
		switch {
		case req.Thinking.BudgetTokens < minThinkingBudget:
			return badRequest("thinking.enabled.budget_tokens: Input should be greater than or equal to "+strconv.Itoa(minThinkingBudget), "")
		case req.Thinking.BudgetTokens >= *req.MaxTokens:
			return badRequest("`max_tokens` must be greater than `thinking.budget_tokens`", "")
		}
	}
	return nil
}

func (x *exchange) newMessageTurn(req *wireRequest) (*messageTurn, *apiError) {
	if err := validateMessagesRequest(req, x.r.Header.Get("Anthropic-Version"), true); err != nil {
		return nil, err
	}
	conv, err := req.messagesConversation()
	if err != nil {
		return nil, badRequest(err.Error(), "")
	}
	format, apiErr := x.messagesFormat(req)
	if apiErr == nil {
		apiErr = checkThinkingReplay(req.Messages)
	}
	if apiErr == nil {
		apiErr = checkStrictTools(req.Tools)
	}
	if apiErr != nil {
		return nil, apiErr
	}
	call, choice, err := x.toolCall(req, conv.afterToolResult)
	if err != nil {
		return nil, badRequest("tool_choice: "+err.Error(), "")
	}
	thinking := !x.dropped(plan.CapExtendedThinking) && req.Thinking != nil &&
		(req.Thinking.Type == "enabled" || req.Thinking.Type == "adaptive")
	omitted := thinking && req.Thinking.Display == "omitted"
	forced := choice.mode == choiceRequired || choice.mode == choiceNamed
	if thinking && forced {
		return nil, badRequest("Thinking may not be enabled when tool_choice forces tool use.", "")
	}
	cached := !x.dropped(plan.CapPromptCaching) && (x.usage.Split || bytes.Contains(x.body, []byte(`"cache_control"`)))
	t := &messageTurn{id: x.s.newID("msg_"), model: req.Model, usage: newAnthropicUsage(conv.textBytes, cached)}
	t.usage.plain = x.dropped(plan.CapUsageDetails)
	plan := answerPlan{lastUser: conv.lastUser, stops: req.StopSequences, budget: *req.MaxTokens, call: call, forced: forced, format: format}
	if thinking && !t.think(&plan, omitted) {
		t.stopReason = "max_tokens"
	} else {
		t.addAnswer(x.s, &plan)
	}
	for i := range t.blocks {
		t.usage.output += t.blocks[i].tokens()
	}
	return t, nil
}

// messagesFormat reads output_config.format, which a server dropping
// structured output ignores.
func (x *exchange) messagesFormat(req *wireRequest) (outputFormat, *apiError) {
	if x.dropped(plan.CapStructuredOutput) {
		return outputFormat{kind: formatText}, nil
	}
	return req.anthropicFormat()
}

// answerPlan is what the visible answer follows.
type answerPlan struct {
	lastUser string
	stops    []string
	// budget is what is left of max_tokens.
	budget int
	call   *toolCall
	forced bool
	format outputFormat
}

// think adds the thinking block, which counts toward max_tokens, and
// reports whether it left room for an answer.
func (t *messageTurn) think(p *answerPlan, omitted bool) bool {
	thought := newReply(thinkingText(p.lastUser), nil, p.budget, pieces)
	t.blocks = append(t.blocks, contentBlock{kind: "thinking", rep: thought, signature: thinkingSignature(thought.text), omitted: omitted})
	t.usage.thinking = thought.tokens()
	p.budget -= thought.tokens()
	return !thought.truncated && p.budget > 0
}

// addAnswer appends the visible answer: a tool call (introduced by a
// sentence unless the call was forced, as Claude does), or text in the
// requested format cut by stop sequences and the token budget.
func (t *messageTurn) addAnswer(s *Server, p *answerPlan) {
	if p.call != nil {
		if !p.forced {
			intro := newReply("I'll use the "+p.call.name+" tool.", nil, -1, pieces)
			t.blocks = append(t.blocks, contentBlock{kind: "text", rep: intro})
		}
		t.blocks = append(t.blocks, contentBlock{kind: "tool_use", id: s.newID("toolu_"), call: p.call})
		t.stopReason = "tool_use"
		return
	}
	rep := p.format.reply(p.lastUser, p.stops, p.budget)
	if rep.tokens() > 0 {
		t.blocks = append(t.blocks, contentBlock{kind: "text", rep: rep})
	}
	switch {
	case rep.stop != "":
		t.stopReason, t.stopSequence = "stop_sequence", rep.stop
	case rep.truncated:
		t.stopReason = "max_tokens"
	default:
		t.stopReason = "end_turn"
	}
}

// appendMessage writes the message object: final with content, stop reason
// and usage, otherwise as message_start shows it.
func (t *messageTurn) appendMessage(b []byte, final bool) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, t.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, t.model)
	b = append(b, `,"content":[`...)
	if final {
		for i := range t.blocks {
			if i > 0 {
				b = append(b, ',')
			}
			b = t.blocks[i].appendBlock(b, true)
		}
	}
	b = append(b, `],"stop_reason":`...)
	if final {
		b = appendString(b, t.stopReason)
		b = append(b, `,"stop_sequence":`...)
		b = appendStringOrNull(b, t.stopSequence)
	} else {
		b = append(b, `null,"stop_sequence":null`...)
	}
	b = append(b, `,"stop_details":null,"usage":`...)
	shape := usageStart
	if final {
		shape = usageMessage
	}
	b = appendAnthropicUsage(b, t.usage, shape)
	return append(b, '}')
}

// shownThinking is the thinking text the answer shows.
func (c *contentBlock) shownThinking() string {
	if c.omitted {
		return ""
	}
	return c.rep.text
}

// appendBlock writes a content block: full, or as content_block_start
// opens it.
func (c *contentBlock) appendBlock(b []byte, full bool) []byte {
	switch c.kind {
	case "thinking":
		b = append(b, `{"type":"thinking","thinking":`...)
		if full {
			b = appendString(b, c.shownThinking())
			b = append(b, `,"signature":`...)
			b = appendString(b, c.signature)
		} else {
			b = append(b, `"","signature":""`...)
		}
	case "tool_use":
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendString(b, c.id)
		b = append(b, `,"name":`...)
		b = appendString(b, c.call.name)
		b = append(b, `,"input":`...)
		if full {
			b = append(b, c.call.arguments...)
		} else {
			b = append(b, "{}"...)
		}
	default:
		b = append(b, `{"type":"text","text":`...)
		if full {
			b = appendString(b, c.rep.text)
		} else {
			b = append(b, `""`...)
		}
	}
	return append(b, '}')
}
