package plan

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"
)

// Cap is one capability a request can depend on.
type Cap uint8

// The vocabulary. The order is the bit order of CapSet and is part of the
// bundle format: append, never reorder.
const (
	CapStrictTools Cap = iota
	CapStructuredOutput
	CapPromptCaching
	CapExtendedThinking
	CapUsageDetails
	CapAudioInput
	CapMultiChoice
	numCaps
)

var capNames = [numCaps]string{
	"strict_tools", "structured_output", "prompt_caching", "extended_thinking",
	"usage_details", "audio_input", "multi_choice",
}

// String returns the capability's configuration name.
func (c Cap) String() string {
	if c < numCaps {
		return capNames[c]
	}
	return fmt.Sprintf("cap(%d)", uint8(c))
}

// CapNames lists every capability name in bit order.
func CapNames() []string { return append([]string(nil), capNames[:]...) }

// ParseCap returns the capability with the given configuration name.
func ParseCap(name string) (Cap, bool) {
	for i, n := range capNames {
		if n == name {
			return Cap(i), true
		}
	}
	return 0, false
}

// ParseCaps reads a comma-separated list of capability names (spaces
// around a name and empty items are ignored), as the command lines take
// one.
func ParseCaps(list string) (CapSet, error) {
	var set CapSet
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c, ok := ParseCap(name)
		if !ok {
			return 0, fmt.Errorf("unknown capability %q (known: %s)", name, strings.Join(CapNames(), ", "))
		}
		set |= Of(c)
	}
	return set, nil
}

// CapSet is a bitmask of capabilities.
type CapSet uint32

// AllCaps is every capability: what a native channel preserves.
const AllCaps = CapSet(1)<<numCaps - 1

// Of builds a set from capabilities.
func Of(caps ...Cap) CapSet {
	var s CapSet
	for _, c := range caps {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s CapSet) Has(c Cap) bool { return s&(1<<c) != 0 }

// Len is the number of capabilities in s.
func (s CapSet) Len() int { return bits.OnesCount32(uint32(s)) }

// Caps lists the capabilities in s in bit order.
func (s CapSet) Caps() []Cap {
	var out []Cap
	for c := Cap(0); c < numCaps; c++ {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Names lists the capability names in s in bit order.
func (s CapSet) Names() []string {
	out := []string{}
	for _, c := range s.Caps() {
		out = append(out, c.String())
	}
	return out
}

// String renders s as a bracketed, comma-separated list.
func (s CapSet) String() string { return "[" + strings.Join(s.Names(), ", ") + "]" }

// MarshalJSON writes a CapSet as a list of names, so bundle.json stays
// readable and independent of bit order.
func (s CapSet) MarshalJSON() ([]byte, error) { return json.Marshal(s.Names()) }

// UnmarshalJSON reads a list of names.
func (s *CapSet) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	var out CapSet
	for _, n := range names {
		c, ok := ParseCap(n)
		if !ok {
			return fmt.Errorf("unknown capability %q", n)
		}
		out |= 1 << c
	}
	*s = out
	return nil
}

// TranslationLosses is what each wired translation pair cannot carry.
// anthropic_openai loses extended_thinking although it asks for the
// reasoning: Chat Completions never returns the thinking, and an Anthropic
// client's thinking is the blocks it gets back.
var TranslationLosses = map[Translation]CapSet{
	TranslateOpenAIAnthropic: Of(CapAudioInput, CapMultiChoice, CapUsageDetails),
	TranslateAnthropicOpenAI: Of(CapStrictTools, CapPromptCaching, CapStructuredOutput, CapExtendedThinking, CapUsageDetails),
	// Responses has a place for every split of Anthropic's usage and for
	// thinking (as reasoning items): responses→anthropic loses only audio
	// input, which Claude does not take; anthropic→responses carries block
	// cache breakpoints but not a top-level or tool cache_control.
	TranslateResponsesAnthropic: Of(CapAudioInput),
	TranslateAnthropicResponses: Of(CapPromptCaching),
}
