package translate

import (
	"io"
	"net/http"
	"slices"

	"github.com/pistra/pistra/runtime/meter"
)

// responsesAnthropic serves an OpenAI Responses client from an Anthropic
// upstream. Unlike the chat pairs it is bound to one request: Anthropic has
// no freeform tools, so the request translator records which tools were
// custom, and the answer translators give those calls back as
// custom_tool_call items.
type responsesAnthropic struct {
	custom []string
}

var _ Pair = (*responsesAnthropic)(nil)

// Options are the openai→anthropic pair's: Anthropic requires max_tokens
// (Codex sends none), and the anthropic-version decides sampling.
func (*responsesAnthropic) Options(t Target, h http.Header) Options {
	return openAIAnthropic{}.Options(t, h)
}

func (p *responsesAnthropic) Request(dst, body []byte, o Options) ([]byte, bool, error) {
	p.custom = p.custom[:0]
	return ResponsesToAnthropicRequest(dst, body, o, &p.custom)
}

func (*responsesAnthropic) FitHeaders(h http.Header, o Options) {
	openAIAnthropic{}.FitHeaders(h, o)
}

func (p *responsesAnthropic) Response(body []byte, model string) ([]byte, meter.Usage, error) {
	return AnthropicToResponsesResponse(body, model, p.isCustom)
}

func (*responsesAnthropic) Error(status int, body []byte) (int, []byte) {
	return AnthropicErrorToResponses(status, body)
}

func (p *responsesAnthropic) Stream(w io.Writer, model string, _ bool) Stream {
	return NewAnthropicToResponsesStream(w, model, p.isCustom)
}

func (p *responsesAnthropic) isCustom(name string) bool { return slices.Contains(p.custom, name) }
