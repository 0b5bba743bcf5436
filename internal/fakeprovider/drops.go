package fakeprovider

import (
	"fmt"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// Drops are the capabilities a server drops, the way a compatibility
// endpoint hosting another vendor's dialect does, so that a probe (and the
// tests of one) has something honest to observe. What dropping each means,
// on Chat Completions and Messages (the Responses API and legacy
// completions are not affected):
//
//   - strict_tools: strict on a tool is not held to: a call's arguments
//     carry a property the tool's schema does not declare.
//   - structured_output: response_format (output_config.format) is
//     ignored: the answer is plain text.
//   - prompt_caching: no cache reads or writes are reported, however long
//     and often repeated the prefix, cache_control or not.
//   - extended_thinking: reasoning_effort and thinking are ignored: no
//     reasoning tokens, no thinking block.
//   - usage_details: usage carries the plain counts only: no
//     prompt/completion detail objects, no cache fields.
//   - audio_input: an input_audio part is refused with a 400.
//   - multi_choice: n other than 1 is refused with a 400.
//
// Anthropic's OpenAI-compatible layer (an Anthropic server's
// /v1/chat/completions) drops all of them whatever the server's Drops, as
// its documentation says, except that it strips audio silently rather than
// refusing it.
//
// A server's Drops come from Options, SetDrops or POST /_fake/drops, in the
// text form ParseDrops reads.
type Drops plan.CapSet

// allDrops is every capability: what Anthropic's compatible layer drops.
const allDrops = Drops(plan.AllCaps)

// ParseDrops reads a comma-separated list of capability names; the empty
// string drops nothing.
func ParseDrops(s string) (Drops, error) {
	caps, err := plan.ParseCaps(s)
	if err != nil {
		return 0, fmt.Errorf("drops: %w", err)
	}
	return Drops(caps), nil
}

// Has reports whether c is dropped.
func (d Drops) Has(c plan.Cap) bool { return plan.CapSet(d).Has(c) }

// String is the text form ParseDrops reads.
func (d Drops) String() string { return strings.Join(plan.CapSet(d).Names(), ",") }

// MarshalText writes the text form, so JSON carries Drops as a string.
func (d Drops) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads the text form.
func (d *Drops) UnmarshalText(text []byte) error {
	parsed, err := ParseDrops(string(text))
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// SetDrops replaces the capabilities the server drops.
func (s *Server) SetDrops(d Drops) { s.drops.Store(uint32(d)) }

// Drops returns the capabilities the server drops.
func (s *Server) Drops() Drops { return Drops(s.drops.Load()) }

// dropsFor is what one call drops: the server's, or everything on
// Anthropic's compatible layer.
func (s *Server) dropsFor(compat bool) Drops {
	if compat {
		return allDrops
	}
	return s.Drops()
}

// dropped reports whether the call drops c.
func (x *exchange) dropped(c plan.Cap) bool { return x.drops.Has(c) }

// unheldProperty is the property a dropped strict mode lets into a call's
// arguments: the model wrote it, and nothing held the call to the schema.
const unheldProperty = `"unrequested":"not in the schema"`

// unheld adds unheldProperty to an arguments object.
func unheld(arguments string) string {
	if arguments == "{}" {
		return "{" + unheldProperty + "}"
	}
	return arguments[:len(arguments)-1] + "," + unheldProperty + "}"
}

// toolCall is req.toolCall on a server that may drop strict_tools: then a
// strict tool's call is not held to its schema.
func (x *exchange) toolCall(req *wireRequest, afterToolResult bool) (*toolCall, toolChoice, error) {
	call, choice, err := req.toolCall(afterToolResult)
	if call != nil && call.strict && x.dropped(plan.CapStrictTools) {
		call.arguments = unheld(call.arguments)
	}
	return call, choice, err
}

// hearAudio applies audio_input to a Chat conversation with input_audio
// parts: a server dropping it refuses them, except Anthropic's compatible
// layer, which strips them unheard.
func (x *exchange) hearAudio(c *conversation) *apiError {
	switch {
	case c.audioBytes == 0 || !x.dropped(plan.CapAudioInput):
		return nil
	case x.compat:
		c.audioBytes = 0
		return nil
	}
	return badRequest("Audio input is not supported by this model.", "messages")
}

// chatUsage counts a Chat conversation's prompt: the breakdowns only on a
// server that keeps usage_details, cache reads only on one that keeps
// prompt_caching.
func (x *exchange) chatUsage(c *conversation) openAIUsage {
	u := newOpenAIUsage(c.textBytes, x.usage.Split && !x.dropped(plan.CapUsageDetails))
	if x.dropped(plan.CapPromptCaching) {
		u.cached = 0
	}
	u.heard(c.audioBytes)
	return u
}
