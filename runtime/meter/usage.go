package meter

import (
	"math"
	"math/bits"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// field is one count a usage object can state, whatever a shape names it.
type field uint8

const (
	fInput field = iota
	fCacheRead
	fCacheWrite
	fOutput
	fTotal
	fReasoning
	nFields
)

// counts is a usage object's figures as the wire wrote them, before they
// are normalised: which were present matters, because an Anthropic
// message_delta restates only some counts and an absent one must keep its
// earlier value.
type counts struct {
	n   [nFields]uint64
	set uint8 // bit f: field f held an integer
	obj bool  // a usage object was read
}

func (c *counts) has(f field) bool { return c.set&(1<<f) != 0 }

// overwrite copies onto c the counts present in o: counts on the wire are
// cumulative, so the latest is the whole figure, never an increment.
func (c *counts) overwrite(o *counts) {
	for f := range nFields {
		if o.has(f) {
			c.n[f] = o.n[f]
		}
	}
	c.set |= o.set
	c.obj = c.obj || o.obj
}

// vocab is one shape's spelling of a usage object: the counts at its top
// and the detail objects nested in it, each a vocab of its own.
type vocab struct {
	counts  []named
	details []detail
}

type named struct {
	key string
	f   field
}

type detail struct {
	key   string
	vocab *vocab
}

// The three shapes' usage objects (docs/wire.md#usage-at-a-glance). Members
// not named here, audio and prediction counts, Anthropic's per-TTL
// cache_creation split, server_tool_use, are skipped.
var (
	chatVocab = vocab{
		counts: []named{{"prompt_tokens", fInput}, {"completion_tokens", fOutput}, {"total_tokens", fTotal}},
		details: []detail{
			{"prompt_tokens_details", &vocab{counts: []named{{"cached_tokens", fCacheRead}, {"cache_write_tokens", fCacheWrite}}}},
			{"completion_tokens_details", &vocab{counts: []named{{"reasoning_tokens", fReasoning}}}},
		},
	}
	responsesVocab = vocab{
		counts: []named{{"input_tokens", fInput}, {"output_tokens", fOutput}, {"total_tokens", fTotal}},
		details: []detail{
			{"input_tokens_details", &vocab{counts: []named{{"cached_tokens", fCacheRead}, {"cache_write_tokens", fCacheWrite}}}},
			{"output_tokens_details", &vocab{counts: []named{{"reasoning_tokens", fReasoning}}}},
		},
	}
	messagesVocab = vocab{
		counts: []named{{"input_tokens", fInput}, {"cache_read_input_tokens", fCacheRead},
			{"cache_creation_input_tokens", fCacheWrite}, {"output_tokens", fOutput}},
		details: []detail{{"output_tokens_details", &vocab{counts: []named{{"thinking_tokens", fReasoning}}}}},
	}
)

func vocabOf(shape Shape) *vocab {
	switch shape {
	case ShapeResponses:
		return &responsesVocab
	case ShapeMessages:
		return &messagesVocab
	}
	return &chatVocab
}

// readUsage consumes the value at the scanner and, if it is an object,
// records the counts it states into c. A count that is null, a string, a
// fraction or negative is absent: only a figure the wire wrote exactly is
// ever read.
func readUsage(s *jsonscan.Scanner, v *vocab, c *counts) {
	if s.Kind() != jsonscan.Object {
		s.Skip()
		return
	}
	c.obj = true
	readCounts(s, v, c)
}

func readCounts(s *jsonscan.Scanner, v *vocab, c *counts) {
next:
	for m := s.Object(); m.Next(); {
		key := m.Key()
		for _, n := range v.counts {
			if string(key) == n.key {
				if x, ok := s.Uint(); ok {
					c.n[n.f], c.set = x, c.set|1<<n.f
				}
				continue next
			}
		}
		for _, d := range v.details {
			if string(key) == d.key {
				readCounts(s, d.vocab, c) // null or another kind: skipped
				continue next
			}
		}
		s.Skip()
	}
}

// fold takes in the counts o one event or object stated. OpenAI usage
// objects are whole-request figures, restated on every chunk by Gemini's
// compat endpoint, so the latest replaces; Anthropic's counts are
// cumulative and each event restates only some, so they overwrite field
// by field.
func (c *counts) fold(shape Shape, o *counts) {
	switch {
	case shape == ShapeMessages:
		c.overwrite(o)
	case o.obj:
		*c = *o
	}
}

// usage normalises c into Usage's convention for the shape that wrote it:
// an OpenAI usage object is reported as soon as it is there, and a total
// of zero is taken as a total not computed; an Anthropic one is reported
// when it states input or output tokens, and its input is input_tokens
// plus the cache reads and writes it counts beside them. Sums saturate
// rather than wrap, so hostile counts cannot turn into a small bill. The
// passthrough readers and the translators (through UsageReader) all
// normalise here.
func (c *counts) usage(shape Shape) Usage {
	u := Usage{
		InputTokens:              c.n[fInput],
		CachedInputTokens:        c.n[fCacheRead],
		CacheCreationInputTokens: c.n[fCacheWrite],
		OutputTokens:             c.n[fOutput],
		TotalTokens:              c.n[fTotal],
		ReasoningTokens:          c.n[fReasoning],
		Reported:                 c.obj,
	}
	if shape == ShapeMessages {
		u.InputTokens = add(add(u.InputTokens, u.CachedInputTokens), u.CacheCreationInputTokens)
		u.Reported = c.has(fInput) || c.has(fOutput)
	}
	if u.TotalTokens == 0 { // Anthropic's vocabulary has no total
		u.TotalTokens = add(u.InputTokens, u.OutputTokens)
	}
	return u
}

// add is a + b, saturating at the largest count.
func add(a, b uint64) uint64 {
	sum, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return sum
}

// UsageReader reads the usage objects of one answer that a translator
// decodes itself, with the passthrough readers' vocabulary and
// normalisation, so a request costs the same whichever path served it.
// The zero value reads chat usage; Reset readies it for another answer.
type UsageReader struct {
	shape Shape
	c     counts
}

// Reset readies r for an answer of the given usage shape.
func (r *UsageReader) Reset(shape Shape) { *r = UsageReader{shape: shape} }

// Read folds in one usage object, the raw JSON value an answer or event
// gave (the caller's decoder has checked it well-formed), as StreamMeter
// folds its events'. An absent, null or non-object value, or a count that
// is not a non-negative integer, is read as absent.
func (r *UsageReader) Read(raw []byte) {
	if len(raw) == 0 {
		return
	}
	s := jsonscan.NewValid(raw)
	var c counts
	readUsage(&s, vocabOf(r.shape), &c)
	s.End()
	if !s.Bad() {
		r.c.fold(r.shape, &c)
	}
}

// Usage is what the objects read so far report, normalised.
func (r *UsageReader) Usage() Usage { return r.c.usage(r.shape) }

// ReadUsage reads a whole answer's one usage object (see UsageReader.Read).
func ReadUsage(shape Shape, raw []byte) Usage {
	r := UsageReader{shape: shape}
	r.Read(raw)
	return r.Usage()
}
