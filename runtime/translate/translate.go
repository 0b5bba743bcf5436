// Package translate converts requests, responses, errors and streams between
// the OpenAI dialect (Chat Completions and Responses) and the Anthropic
// Messages dialect.
//
// Each direction is one Pair value (pair.go), which For returns for a
// candidate's plan.Translation: pistrad's proxy calls it for the request,
// the headers that go with it, the answer, an error and a stream, and never
// asks itself which pair it holds; same-dialect traffic never comes here.
// It works on bytes: no HTTP beyond the request headers a pair fits. Files
// are named for their pair, client dialect first: openai_anthropic*.go
// serves an OpenAI-dialect client from an Anthropic upstream,
// anthropic_openai*.go the reverse.
//
// # What each pair drops
//
// The fidelity gate decides before a request is forwarded, from
// plan.TranslationLosses, so of the capability vocabulary the translators
// drop exactly the declared ones (losses_test.go holds them to it). Content
// and tools that cannot be carried are refused with an error, for the proxy
// to answer 400, rather than dropped.
//
// openai→anthropic (plan.TranslateOpenAIAnthropic):
//   - audio_input: input_audio content parts are removed.
//   - multi_choice: n is ignored; Anthropic answers with one choice.
//   - usage_details: the cache-write count and the reasoning split are folded
//     into prompt_tokens / completion_tokens; only cached_tokens survives.
//
// anthropic→openai (plan.TranslateAnthropicOpenAI):
//   - strict_tools: tools[].strict is removed.
//   - prompt_caching: cache_control (top level, system, tools, blocks) is removed.
//   - structured_output: output_config.format is removed.
//   - extended_thinking: thinking is asked for as reasoning_effort, but Chat
//     Completions returns no thinking, so the answer has no thinking block.
//   - usage_details: cache_creation_input_tokens is reported as 0 (writes stay
//     inside input_tokens) and no thinking-token split is reported.
//
// responses→anthropic (plan.TranslateResponsesAnthropic):
//   - audio_input: input_audio parts are removed.
//
// anthropic→responses (plan.TranslateAnthropicResponses):
//   - prompt_caching: a block's cache_control becomes its part's
//     prompt_cache_breakpoint, but a top-level or tool cache_control has no
//     place on Responses and is removed.
//
// Outside the vocabulary, knobs with no counterpart are dropped: OpenAI seed,
// penalties, logit_bias, logprobs, service_tier, store, verbosity,
// modalities, prediction, web_search_options and message names; Anthropic
// top_k, service_tier, container, inference_geo, speed, is_error on tool
// results and thinking blocks in history. Each request translator lists its
// own.
package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/pistra/pistra/runtime/meter"
)

// Options carries what the request translators cannot read from the body.
type Options struct {
	// UpstreamModel is the model written into the upstream request. Empty
	// keeps the client's model.
	UpstreamModel string
	// DefaultMaxTokens is used when an OpenAI request states no max tokens;
	// Anthropic requires one. Zero means no default: such requests are refused.
	DefaultMaxTokens int64
	// AnthropicVersion is the anthropic-version header the upstream request
	// carries. From 2026-10-21 on, Anthropic rejects temperature, top_p and
	// top_k even at their defaults, so they are dropped for those versions.
	AnthropicVersion string
	// OmitStreamUsage stops an Anthropic client's stream from asking an
	// OpenAI upstream for usage (stream_options.include_usage), for servers
	// that refuse fields they do not know. The client's final usage is then
	// zero.
	OmitStreamUsage bool
}

// Stream translates one upstream SSE stream into the client's dialect, event
// by event. Write accepts upstream bytes with arbitrary chunk boundaries. Each
// call to the client writer carries whole SSE frames, and Write and Close call
// it at most once each, so the caller flushes after every client write.
//
// When Write returns an error the stream has ended short of its message,
// with no error event written (the caller tells the client), and later
// input is ignored; Close is then a no-op.
type Stream interface {
	// Write consumes upstream bytes.
	Write(p []byte) (int, error)
	// Close marks the end of the upstream. It emits the final frames if the
	// upstream finished but they are still owed, or returns
	// ErrIncompleteStream, writing nothing more, if the upstream stopped
	// before finishing.
	Close() error
	// Usage is the usage parsed so far; final after Close.
	Usage() meter.Usage
	// UpstreamError is the error event the upstream sent mid-stream, which
	// the client got as its own dialect's error event; nil when none came.
	// It wraps ErrUpstreamReported.
	UpstreamError() error
}

// ErrIncompleteStream reports an upstream stream that ended before it
// finished its message. No error event has been written for it.
var ErrIncompleteStream = errors.New("translate: upstream stream ended before the message finished")

// ErrUpstreamReported marks an error the upstream itself sent inside a
// stream. The stream ended cleanly with the client's error event.
var ErrUpstreamReported = errors.New("translate: upstream reported an error mid-stream")

// ErrUpstreamEvent reports an upstream stream event that could not be
// understood. No error event has been written for it.
var ErrUpstreamEvent = errors.New("translate: malformed upstream stream event")

var (
	_ Stream    = (*anthropicToOpenAIStream)(nil)
	_ Stream    = (*openAIToAnthropicStream)(nil)
	_ Stream    = (*anthropicToResponsesStream)(nil)
	_ Stream    = (*responsesToAnthropicStream)(nil)
	_ io.Writer = Stream(nil)
)

// now stamps the created field of OpenAI responses; tests pin it.
var now = time.Now

// samplingRejectedFrom is the first anthropic-version that refuses the
// sampling parameters.
const samplingRejectedFrom = "2026-10-21"

// dropsSampling reports whether the Anthropic version refuses temperature,
// top_p and top_k. Versions are ISO dates, so they order as strings.
func (o Options) dropsSampling() bool {
	return o.AnthropicVersion >= samplingRejectedFrom
}

// model returns the upstream model, falling back to the client's.
func (o Options) model(client string) string {
	if o.UpstreamModel != "" {
		return o.UpstreamModel
	}
	return client
}

// marshal encodes v without HTML escaping, so text reaches the other side
// byte for byte rather than with <, > and & rewritten as \u escapes.
func marshal(v any) ([]byte, error) { return appendJSON(nil, v) }

// appendJSON appends the encoding of v to dst, as marshal does.
func appendJSON(dst []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
