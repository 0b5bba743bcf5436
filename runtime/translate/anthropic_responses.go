package translate

import (
	"io"
	"net/http"

	"github.com/pistra/pistra/runtime/meter"
)

// anthropicResponses serves an Anthropic-dialect client from an OpenAI
// channel that offers the model only on /v1/responses.
type anthropicResponses struct{}

var _ Pair = anthropicResponses{}

// Options: only the model. Responses streams report usage unasked.
func (anthropicResponses) Options(t Target, _ http.Header) Options {
	return Options{UpstreamModel: t.Model}
}

func (anthropicResponses) Request(dst, body []byte, o Options) ([]byte, bool, error) {
	return AnthropicToResponsesRequest(dst, body, o)
}

// FitHeaders has nothing to fit, as for the chat pair: the proxy forwards
// none of the client's Anthropic headers to an OpenAI channel.
func (anthropicResponses) FitHeaders(http.Header, Options) {}

func (anthropicResponses) Response(body []byte, model string) ([]byte, meter.Usage, error) {
	return ResponsesToAnthropicResponse(body, model)
}

func (anthropicResponses) Error(status int, body []byte) (int, []byte) {
	return OpenAIErrorToAnthropic(status, body)
}

func (anthropicResponses) Stream(w io.Writer, model string, _ bool) Stream {
	return NewResponsesToAnthropicStream(w, model)
}
