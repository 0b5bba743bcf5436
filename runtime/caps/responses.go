package caps

import (
	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/plan"
)

// responsesMember confirms capabilities in one top-level member of a
// Responses request (docs/wire.md#responses-request). It counts:
//   - strict_tools: a tools[] entry with type "function" and strict true
//     (function tools are flat here, no function wrapper)
//   - structured_output: text.format.type is json_schema or json_object
//   - prompt_caching: prompt_cache_key, _retention or _options set (not
//     null; the first two not empty), or a prompt_cache_breakpoint on an input item's part
//   - extended_thinking: reasoning.effort is a string other than "none"
//   - audio_input: an input item's part of type input_audio
//
// multi_choice does not exist in this API.
func responsesMember(s *jsonscan.Scanner, key []byte) plan.CapSet {
	switch string(key) {
	case "tools":
		return when(responsesStrictTools(s), plan.CapStrictTools)
	case "text":
		return when(formatMemberIsJSON(s), plan.CapStructuredOutput)
	case "prompt_cache_key", "prompt_cache_retention":
		return when(setString(s), plan.CapPromptCaching)
	case "prompt_cache_options":
		return when(present(s), plan.CapPromptCaching)
	case "reasoning":
		return when(reasoningOn(s), plan.CapExtendedThinking)
	case "input":
		// Message items carry parts under content, function call outputs
		// under output; a string input is plain text.
		return openAIItems(s, "content", "output")
	}
	s.Skip()
	return 0
}

// responsesStrictTools reads tools and reports whether any tool is a
// function tool with strict set to true. Both members must be on the same
// tool, in either order.
func responsesStrictTools(s *jsonscan.Scanner) bool {
	strict := false
	for tools := s.Array(); tools.Next(); {
		function, on := false, false
		for tool := s.Object(); tool.Next(); {
			switch string(tool.Key()) {
			case "type":
				if v, ok := s.RawString(); ok && string(v) == "function" {
					function = true
				}
			case "strict":
				if isTrue(s) {
					on = true
				}
			default:
				s.Skip()
			}
		}
		strict = strict || function && on
	}
	return strict
}

// reasoningOn reads the reasoning object and reports whether its effort asks
// for any reasoning.
func reasoningOn(s *jsonscan.Scanner) bool {
	on := false
	for m := s.Object(); m.Find("effort"); {
		if effortOn(s) {
			on = true
		}
	}
	return on
}
