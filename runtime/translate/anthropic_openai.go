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

// anthropicHeaders are the client headers of the Anthropic dialect, which
// an OpenAI upstream does not read.
var anthropicHeaders = [...]string{headerAnthropicVersion, "Anthropic-Beta"}

// Options: the stream asks for usage unless the provider's stream_usage
// is off.
func (anthropicOpenAI) Options(t Target, _ http.Header) Options {
	return Options{UpstreamModel: t.Model, OmitStreamUsage: !t.StreamUsage}
}

func (anthropicOpenAI) Request(dst, body []byte, o Options) ([]byte, bool, error) {
	return AnthropicToOpenAIRequest(dst, body, o)
}

// FitHeaders drops the client's Anthropic headers. A static one is never
// among them: the channel is OpenAI's, and upstream.Resolve keeps each
// dialect's static headers to its own channels.
func (anthropicOpenAI) FitHeaders(h http.Header, _ Options) {
	for _, k := range anthropicHeaders {
		delete(h, k)
	}
}

func (anthropicOpenAI) Response(body []byte, model string) ([]byte, meter.Usage, error) {
	return OpenAIToAnthropicResponse(body, model)
}

func (anthropicOpenAI) Error(status int, body []byte) (int, []byte) {
	return OpenAIErrorToAnthropic(status, body)
}

func (anthropicOpenAI) Stream(w io.Writer, model string, _ bool) Stream {
	return NewOpenAIToAnthropicStream(w, model)
}
