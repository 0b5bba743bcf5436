// Package sdkclient builds the official OpenAI and Anthropic SDK clients
// the tests talk through. It is apart from testkit so that a test which
// only needs a fake upstream, such as the server's fuzz test, does not link
// (or, under -fuzz, instrument) the SDKs.
package sdkclient

import (
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Both clients take base, the API's /v1 URL as a pistra policy names a
// provider's, and make no retries of their own, so that every attempt a
// test counts is the server's.

// OpenAI is an OpenAI client of base presenting key.
func OpenAI(base, key string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0),
	}, opts...)...)
}

// Anthropic is an Anthropic client of base presenting key as the current
// SDK does (Authorization: Bearer); with key "" it presents none, for a
// test that authenticates by header. Nothing is taken from the
// environment (ANTHROPIC_API_KEY and the like).
func Anthropic(base, key string, opts ...aoption.RequestOption) anthropic.Client {
	// The SDK's paths start with v1/, so it wants the origin.
	origin := strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1") + "/"
	all := []aoption.RequestOption{aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(origin), aoption.WithMaxRetries(0)}
	if key != "" {
		all = append(all, aoption.WithAPIKey(key))
	}
	return anthropic.NewClient(append(all, opts...)...)
}

// ReadMessage reads an Anthropic message stream to its end and returns the
// message its events make, or the first error: an event the SDK's
// accumulator refuses, or the stream's own.
func ReadMessage(stream *ssestream.Stream[anthropic.MessageStreamEventUnion]) (anthropic.Message, error) {
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			return msg, err
		}
	}
	return msg, stream.Err()
}
