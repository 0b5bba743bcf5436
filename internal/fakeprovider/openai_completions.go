package fakeprovider

import (
	"encoding/json"
	"errors"
)

// legacyDefaultMaxTokens is the legacy completions API's max_tokens default.
const legacyDefaultMaxTokens = 16

// completionTurn is a whole legacy completions answer: one choice per
// prompt and n, each with its own reply.
type completionTurn struct {
	openAIHead
	replies []reply
}

// POST /v1/completions
func (x *exchange) completions() {
	req, ok := x.request()
	if !ok {
		return
	}
	t, err := x.s.newCompletionTurn(req)
	if err != nil {
		x.fail(err)
		return
	}
	x.billOpenAI(t.model, t.usage)
	if req.Stream {
		x.streamCompletion(t)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	b := t.appendHeader((*buf)[:0], "text_completion")
	for i := range t.replies {
		if i > 0 {
			b = append(b, ',')
		}
		b = t.appendChoice(b, i, t.replies[i].text, t.replies[i].finish())
	}
	b = append(b, `],"usage":`...)
	b = appendChatUsage(b, t.usage, false)
	*buf = append(b, '}')
	x.writeBody(200, *buf)
}

func (s *Server) newCompletionTurn(req *wireRequest) (*completionTurn, *apiError) {
	switch {
	case req.Model == "":
		return nil, badRequest("you must provide a model parameter", "")
	case req.StreamOptions != nil && !req.Stream:
		return nil, badRequest("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
	}
	prompts, err := completionPrompts(req.Prompt)
	if err != nil {
		return nil, badRequest(err.Error(), "prompt")
	}
	n, err := req.choiceCount()
	if err != nil {
		return nil, badRequest(err.Error(), "n")
	}
	stops, err := req.stops()
	if err != nil {
		return nil, badRequest(err.Error(), "stop")
	}
	limit := firstSet(req.MaxTokens)
	if limit < 0 {
		limit = legacyDefaultMaxTokens
	}
	t := &completionTurn{openAIHead: s.newOpenAIHead("cmpl-", req)}
	for _, p := range prompts {
		t.usage.prompt += p.tokens
		rep := newReply(ReplyText(p.text), stops, limit, pieces)
		for range n {
			t.replies = append(t.replies, rep)
			t.usage.completion += rep.tokens()
		}
	}
	return t, nil
}

func (t *completionTurn) appendChoice(b []byte, i int, text, finish string) []byte {
	b = append(b, `{"text":`...)
	b = appendString(b, text)
	b = append(b, `,"index":`...)
	b = appendInt(b, i)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	b = appendStringOrNull(b, finish)
	return append(b, '}')
}

// streamCompletion sends text_completion chunks: each choice's pieces, a
// finish chunk per choice, the usage chunk when asked for, then [DONE].
func (x *exchange) streamCompletion(t *completionTurn) {
	st := x.startStream()
	defer st.close()
	header := t.appendHeader(nil, "text_completion")
	trailer := t.trailer()
	steps := 0
	for _, r := range t.replies {
		steps = max(steps, len(r.pieces))
	}
	for step := 0; step <= steps; step++ {
		for i, r := range t.replies {
			var b []byte
			switch {
			case step == steps:
				b = t.appendChoice(append(st.begin(""), header...), i, "", r.finish())
			case step < len(r.pieces):
				b = t.appendChoice(append(st.begin(""), header...), i, r.pieces[step], "")
			default:
				continue
			}
			if st.sendKind(append(b, trailer...), step < steps) != nil {
				return
			}
		}
	}
	t.endStream(st, header, false)
}

type completionPrompt struct {
	text   string
	tokens int
}

// completionPrompts reads prompt: a string, strings, tokens, or token lists.
// Token prompts have no text to echo.
func completionPrompts(raw json.RawMessage) ([]completionPrompt, error) {
	if !present(raw) {
		return nil, errors.New("Missing required parameter: 'prompt'.")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []completionPrompt{{text: one, tokens: promptTokens(len(one))}}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		out := make([]completionPrompt, len(many))
		for i, s := range many {
			out[i] = completionPrompt{text: s, tokens: promptTokens(len(s))}
		}
		return out, nil
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil {
		return []completionPrompt{{tokens: max(len(tokens), 1)}}, nil
	}
	var lists [][]int
	if err := json.Unmarshal(raw, &lists); err != nil {
		return nil, errors.New("prompt must be a string, an array of strings, an array of tokens or an array of token arrays")
	}
	out := make([]completionPrompt, len(lists))
	for i, l := range lists {
		out[i] = completionPrompt{tokens: max(len(l), 1)}
	}
	return out, nil
}
