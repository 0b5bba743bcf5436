package translate

import (
	"io"
	"net/http"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// Pair is one translation direction, client dialect to upstream dialect:
// everything the proxy needs to serve a client through an upstream of the
// other dialect, so the proxy itself never asks which pair it holds. For
// returns a value per request: most are stateless, and one that must carry
// something from a request to its answer keeps it from Request on.
type Pair interface {
	// Options is what the request translator needs for target, a request
	// whose client sent header.
	Options(target Target, header http.Header) Options
	// Request appends to dst the upstream body for the client's body and
	// reports whether the client asked to stream. An error means the body
	// cannot be carried; the client is answered 400.
	Request(dst, body []byte, o Options) (out []byte, stream bool, err error)
	// FitHeaders fits an upstream request's headers, built for the
	// client's dialect, to the upstream's: the client headers that mean
	// nothing there are dropped, and the ones the translated body was
	// written for are set.
	FitHeaders(h http.Header, o Options)
	// Response translates a whole non-stream answer; model names the
	// upstream model when the answer does not.
	Response(body []byte, model string) ([]byte, meter.Usage, error)
	// Error translates an upstream error answer, keeping its message.
	Error(status int, body []byte) (int, []byte)
	// Stream translates one upstream event stream into client frames
	// written to w; askedUsage is whether the client's request asked for
	// the usage chunk (stream_options.include_usage), which the frames
	// honour.
	Stream(w io.Writer, model string, askedUsage bool) Stream
}

// Target is what a pair needs to know of the candidate it writes for.
type Target struct {
	// Model is the upstream model.
	Model string
	// MaxTokens is the model's default max_tokens; 0 when none is set.
	MaxTokens int64
	// AnthropicVersion is the provider's static anthropic-version, "" when
	// it sets none.
	AnthropicVersion string
	// StreamUsage is the provider's stream_usage: whether streams may ask
	// it for usage.
	StreamUsage bool
}

// For returns the pair that serves translation t for one request, or nil when t is none
// (or a pair this build does not know, which the bundle check refuses).
func For(t plan.Translation) Pair {
	switch t {
	case plan.TranslateOpenAIAnthropic:
		return openAIAnthropic{}
	case plan.TranslateAnthropicOpenAI:
		return anthropicOpenAI{}
	case plan.TranslateResponsesAnthropic:
		return new(responsesAnthropic)
	case plan.TranslateAnthropicResponses:
		return anthropicResponses{}
	}
	return nil
}
