package translate

import (
	"io"
	"net/http"

	"github.com/pistra/pistra/runtime/meter"
)

// anthropicOpenAI serves an Anthropic-dialect client from an OpenAI
// upstream.
type anthropicOpenAI struct{}

var _ Pair = anthropicOpenAI{}

// Options: the stream asks for usage unless the provider's stream_usage
// is off.
func (anthropicOpenAI) Options(t Target, _ http.Header) Options {
	return Options{UpstreamModel: t.Model, OmitStreamUsage: !t.StreamUsage}
}

func (anthropicOpenAI) Request(dst, body []byte, o Options) ([]byte, bool, error) {
	return AnthropicToOpenAIRequest(dst, body, o)
}

// FitHeaders has nothing to fit: the request is built for an OpenAI
// channel, to which the proxy forwards none of the client's Anthropic
// headers and upstream.Resolve none of the static ones.
func (anthropicOpenAI) FitHeaders(http.Header, Options) {}

func (anthropicOpenAI) Response(body []byte, model string) ([]byte, meter.Usage, error) {
	return OpenAIToAnthropicResponse(body, model)
}

func (anthropicOpenAI) Error(status int, body []byte) (int, []byte) {
	return OpenAIErrorToAnthropic(status, body)
}

func (anthropicOpenAI) Stream(w io.Writer, model string, _ bool) Stream {
	return NewOpenAIToAnthropicStream(w, model)
}
