package translate

import (
	"cmp"
	"io"
	"net/http"

	"github.com/pistra/pistra/runtime/meter"
)

// DefaultAnthropicVersion is sent to an Anthropic upstream when neither the
// provider nor the client names one: the version every SDK before the 1.0
// majors sends, which still accepts temperature and top_p.
const DefaultAnthropicVersion = "2023-06-01"

const headerAnthropicVersion = "Anthropic-Version"

// openAIAnthropic serves an OpenAI-dialect client from an Anthropic
// upstream.
type openAIAnthropic struct{}

var _ Pair = openAIAnthropic{}

// Options: Anthropic requires max_tokens, and the anthropic-version the
// request carries (the provider's, else the client's, else the default)
// decides whether sampling parameters may be sent.
func (openAIAnthropic) Options(t Target, h http.Header) Options {
	return Options{
		UpstreamModel:    t.Model,
		DefaultMaxTokens: t.MaxTokens,
		AnthropicVersion: cmp.Or(t.AnthropicVersion, h.Get(headerAnthropicVersion), DefaultAnthropicVersion),
	}
}

func (openAIAnthropic) Request(dst, body []byte, o Options) ([]byte, bool, error) {
	return OpenAIToAnthropicRequest(dst, body, o)
}

// FitHeaders sends the anthropic-version the body was translated for.
func (openAIAnthropic) FitHeaders(h http.Header, o Options) {
	h[headerAnthropicVersion] = []string{o.AnthropicVersion}
}

func (openAIAnthropic) Response(body []byte, model string) ([]byte, meter.Usage, error) {
	return AnthropicToOpenAIResponse(body, model)
}

func (openAIAnthropic) Error(status int, body []byte) (int, []byte) {
	return AnthropicErrorToOpenAI(status, body)
}

func (openAIAnthropic) Stream(w io.Writer, model string, askedUsage bool) Stream {
	return NewAnthropicToOpenAIStream(w, model, askedUsage)
}
