// Package meter owns what pistrad knows of the tokens an answer used: the
// one Usage type every part of the request path speaks (the translators
// that parse it, the passthrough readers that scan it, the cost
// expressions that price it), and where a request's figures were read.
//
// The gateway never counts tokens itself: every figure here is the
// provider's, read from its answer.
package meter

// Usage is one answer's token counts, in a single convention whatever the
// wire said: InputTokens includes cache reads and cache writes, and
// CachedInputTokens and CacheCreationInputTokens are subsets of it;
// ReasoningTokens is a subset of OutputTokens. OpenAI already counts that
// way; Anthropic reports cache reads and writes beside input_tokens, so a
// reader of its shape adds them in rather than copying input_tokens.
type Usage struct {
	InputTokens              uint64
	CachedInputTokens        uint64
	CacheCreationInputTokens uint64
	OutputTokens             uint64
	TotalTokens              uint64
	ReasoningTokens          uint64
	// Reported is false when the answer carried no usage at all, which is
	// not the same as a usage of zero.
	Reported bool
}

// Source says where a request's usage was read.
type Source uint8

const (
	// SourceNone: nothing read a usage (the gateway answered itself, or the
	// answer's shape carries none).
	SourceNone Source = iota
	// SourcePassthrough: scanned from the upstream's bytes as they were
	// relayed unchanged.
	SourcePassthrough
	// SourceTranslator: parsed by the translator that rewrote the answer
	// into the client's dialect.
	SourceTranslator
)

var sourceNames = [...]string{"none", "passthrough", "translator"}

// String is the source's name in the request log.
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "unknown"
}
