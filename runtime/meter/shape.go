package meter

import "github.com/pistra/pistra/runtime/plan"

// Shape is a usage wire shape. The route picks it, not the dialect: the
// OpenAI dialect has two (Chat Completions and Responses) that share no
// usage field name at all.
type Shape uint8

const (
	// ShapeChat is OpenAI's chat shape, for chat_completions, completions
	// and embeddings: prompt_tokens, completion_tokens, total_tokens and
	// their details objects, at the top of an answer or a stream chunk.
	ShapeChat Shape = iota
	// ShapeResponses is OpenAI's Responses shape: input_tokens,
	// output_tokens and their details, nested in the response object of
	// a stream's terminal event.
	ShapeResponses
	// ShapeMessages is Anthropic's: input_tokens beside the cache reads
	// and writes, output_tokens cumulative on every message_delta.
	ShapeMessages
)

// ShapeOf is the usage shape of an answer on upstream route r.
func ShapeOf(r plan.Route) Shape {
	switch r {
	case plan.RouteResponses:
		return ShapeResponses
	case plan.RouteMessages:
		return ShapeMessages
	}
	return ShapeChat
}

// Event says what one stream event is to the relay; an event can be
// several things at once (Responses' response.failed ends the stream and
// is an error), or none of them (ordinary content).
type Event uint8

const (
	// UsageOnly marks a chat chunk that carries nothing but usage: empty
	// choices and a usage object, no other content. It is the chunk
	// stream_options.include_usage adds, which the relay removes when the
	// gateway asked for it on the client's behalf. A chunk with usage and
	// any content is content, and content is read broadly: any member but
	// the chunk's identity and routing metadata (id, object, created,
	// model, system_fingerprint, service_tier, obfuscation, and the
	// provider and x_groq members OpenRouter and Groq add) and members
	// that are null, so a chunk that could hold output is never dropped.
	UsageOnly Event = 1 << iota
	// Terminal marks the event that ends a complete stream: chat's
	// [DONE], Responses' response.completed, response.incomplete or
	// response.failed (or response.done, which some compatible backends
	// send instead), Anthropic's message_stop.
	Terminal
	// Error marks an error the upstream reported in the stream: a chat
	// chunk with a top-level "error", Responses' error or response.failed,
	// Anthropic's error event; in any shape, an event whose top-level
	// "error" is not null.
	Error
)
