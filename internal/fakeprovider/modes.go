package fakeprovider

import (
	"fmt"
	"net/http"
	"strings"
)

// Usage shapes the usage a server reports, for testing the readers of it:
// OpenAI and Anthropic show their breakdowns only when a request earns them,
// and other OpenAI-compatible servers place stream usage elsewhere. The zero
// value reports as OpenAI and Anthropic do.
//
// A server's Usage comes from Options, SetUsage or POST /_fake/usage; a
// request replaces it with the UsageHeader header. Both take the text form
// ParseUsage reads.
type Usage struct {
	// Split reports each breakdown of the API on every answer, whatever the
	// prompt: OpenAI's cached tokens (within the prompt count) and reasoning
	// tokens (within the completion count), Anthropic's cache reads and writes
	// (beside input_tokens). Otherwise they appear only when earned: a prompt
	// of 1024 tokens or more, a reasoning effort, cache_control.
	Split bool
	// ChatStream is where a Chat Completions stream carries its usage.
	ChatStream ChatStreamUsage
}

// ChatStreamUsage places the usage of a Chat Completions stream.
type ChatStreamUsage int

const (
	// UsageChunk is OpenAI's rule: with stream_options.include_usage a final
	// chunk with no choices carries the usage, every other chunk "usage":null;
	// without it no chunk mentions usage.
	UsageChunk ChatStreamUsage = iota
	// UsageEveryChunk is what Gemini's OpenAI-compatible endpoint does: every
	// chunk carries the running usage and the last the final, asked for or not.
	UsageEveryChunk
	// UsageWithLastChoice puts the final usage in the chunk that finishes the
	// last choice, asked for or not, with no usage-only chunk after it.
	UsageWithLastChoice
)

// UsageHeader names the request header that replaces the server's Usage for
// one call, e.g. "Fake-Usage: split, every-chunk"; an empty value restores
// the real APIs' behaviour.
const UsageHeader = "Fake-Usage"

// Words of the text form, comma-separated.
const (
	usageSplit      = "split"
	usageEveryChunk = "every-chunk"
	usageLastChoice = "last-choice"
)

// ParseUsage reads a comma-separated list of "split", "every-chunk" and
// "last-choice"; the empty string is the zero Usage.
func ParseUsage(s string) (Usage, error) {
	var u Usage
	for word := range strings.SplitSeq(s, ",") {
		word = strings.TrimSpace(word)
		stream := UsageChunk
		switch word {
		case "":
			continue
		case usageSplit:
			u.Split = true
			continue
		case usageEveryChunk:
			stream = UsageEveryChunk
		case usageLastChoice:
			stream = UsageWithLastChoice
		default:
			return Usage{}, fmt.Errorf("usage mode %q: want %s, %s or %s", word, usageSplit, usageEveryChunk, usageLastChoice)
		}
		if u.ChatStream != UsageChunk && u.ChatStream != stream {
			return Usage{}, fmt.Errorf("usage modes %s and %s exclude each other", usageEveryChunk, usageLastChoice)
		}
		u.ChatStream = stream
	}
	return u, nil
}

// String is the text form ParseUsage reads.
func (u Usage) String() string {
	var words []string
	if u.Split {
		words = append(words, usageSplit)
	}
	switch u.ChatStream {
	case UsageEveryChunk:
		words = append(words, usageEveryChunk)
	case UsageWithLastChoice:
		words = append(words, usageLastChoice)
	}
	return strings.Join(words, ",")
}

// MarshalText writes the text form, so JSON carries Usage as a string.
func (u Usage) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText reads the text form.
func (u *Usage) UnmarshalText(text []byte) error {
	parsed, err := ParseUsage(string(text))
	if err != nil {
		return err
	}
	*u = parsed
	return nil
}

// SetUsage replaces the server's Usage.
func (s *Server) SetUsage(u Usage) { s.usage.Store(&u) }

// Usage returns the server's Usage.
func (s *Server) Usage() Usage { return *s.usage.Load() }

// usageFor returns the Usage of one call: the header's when it has one.
func (s *Server) usageFor(h http.Header) (Usage, *apiError) {
	v, ok := h[UsageHeader]
	if !ok {
		return s.Usage(), nil
	}
	u, err := ParseUsage(strings.Join(v, ","))
	if err != nil {
		return Usage{}, badRequest(UsageHeader+": "+err.Error(), "")
	}
	return u, nil
}
