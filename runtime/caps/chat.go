package caps

import (
	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/plan"
)

// chatMember confirms capabilities in one top-level member of a Chat
// Completions request (docs/wire.md#chat-completions-request). It counts:
//   - strict_tools: tools[].function.strict is true
//   - structured_output: response_format.type is json_schema or json_object
//   - prompt_caching: prompt_cache_key, _retention or _options set (not
//     null; the first two not empty), or a prompt_cache_breakpoint on a
//     messages[].content[] part
//   - extended_thinking: reasoning_effort is a string other than "none", or
//     a top-level thinking object that turns thinking on (the extension
//     Anthropic's OpenAI-compatible endpoint accepts)
//   - audio_input: a messages[].content[] part of type input_audio; asking
//     for audio output (modalities, audio) is not audio input
//   - multi_choice: n is a number greater than 1
func chatMember(s *jsonscan.Scanner, key []byte) plan.CapSet {
	switch string(key) {
	case "tools":
		return when(chatStrictTools(s), plan.CapStrictTools)
	case "response_format":
		// json_object counts as well as json_schema: JSON mode is the weaker
		// form of the same promise, and a compat endpoint that ignores
		// response_format breaks both.
		return when(formatIsJSON(s), plan.CapStructuredOutput)
	case "prompt_cache_key", "prompt_cache_retention":
		return when(setString(s), plan.CapPromptCaching)
	case "prompt_cache_options":
		return when(present(s), plan.CapPromptCaching)
	case "reasoning_effort":
		return when(effortOn(s), plan.CapExtendedThinking)
	case "thinking":
		// Anthropic's own thinking object, which its OpenAI-compatible
		// endpoint takes as an extension of Chat Completions.
		return when(thinkingOn(s), plan.CapExtendedThinking)
	case "messages":
		return openAIItems(s, "content")
	case "n":
		return when(moreThanOne(s), plan.CapMultiChoice)
	}
	s.Skip()
	return 0
}

// chatStrictTools reads tools and reports whether any function tool sets
// function.strict to true.
func chatStrictTools(s *jsonscan.Scanner) bool {
	strict := false
	for tools := s.Array(); tools.Next(); {
		for tool := s.Object(); tool.Find("function"); {
			for fn := s.Object(); fn.Find("strict"); {
				if isTrue(s) {
					strict = true
				}
			}
		}
	}
	return strict
}

// openAIItems reads an array of messages (Chat) or input items (Responses)
// and returns what their content parts use. Each item's parts sit under the
// given keys; a string there is plain text and uses nothing.
func openAIItems(s *jsonscan.Scanner, partKeys ...string) plan.CapSet {
	var got plan.CapSet
	for items := s.Array(); items.Next(); {
		for item := s.Object(); item.Next(); {
			if oneOf(item.Key(), partKeys) {
				got |= openAIParts(s)
				continue
			}
			s.Skip()
		}
	}
	return got
}

// openAIParts reads an array of content parts: an input_audio part is audio
// input, and a prompt_cache_breakpoint on any part is an explicit caching
// request.
func openAIParts(s *jsonscan.Scanner) plan.CapSet {
	var got plan.CapSet
	for parts := s.Array(); parts.Next(); {
		for part := s.Object(); part.Next(); {
			switch string(part.Key()) {
			case "type":
				if v, ok := s.RawString(); ok && string(v) == "input_audio" {
					got |= plan.Of(plan.CapAudioInput)
				}
			case "prompt_cache_breakpoint":
				got |= when(present(s), plan.CapPromptCaching)
			default:
				s.Skip()
			}
		}
	}
	return got
}

// formatIsJSON reads a format object and reports whether its type asks for
// JSON output, with or without a schema.
func formatIsJSON(s *jsonscan.Scanner) bool {
	json := false
	for m := s.Object(); m.Find("type"); {
		if v, ok := s.RawString(); ok && (string(v) == "json_schema" || string(v) == "json_object") {
			json = true
		}
	}
	return json
}

// formatMemberIsJSON reads an object holding a format member (Responses
// text, Anthropic output_config) and reports whether that format asks for
// JSON output.
func formatMemberIsJSON(s *jsonscan.Scanner) bool {
	json := false
	for m := s.Object(); m.Find("format"); {
		if formatIsJSON(s) {
			json = true
		}
	}
	return json
}

// setString consumes the value at pos and reports whether it is set: a
// non-empty string, or any other value but null (which the upstream's own
// validation then answers). An empty string asks for nothing, as the
// translator reads it.
func setString(s *jsonscan.Scanner) bool {
	if s.Kind() == jsonscan.String {
		v, ok := s.RawString()
		return ok && len(v) > 0
	}
	return present(s)
}

// effortOn reads a reasoning effort and reports whether it asks for any
// reasoning: any string but "none". Null or another shape is not a request.
func effortOn(s *jsonscan.Scanner) bool {
	v, ok := s.RawString()
	return ok && string(v) != "none"
}

// when returns the set holding c if ok, and the empty set otherwise.
func when(ok bool, c plan.Cap) plan.CapSet {
	if ok {
		return plan.Of(c)
	}
	return 0
}

// oneOf reports whether key is one of names.
func oneOf(key []byte, names []string) bool {
	for _, n := range names {
		if string(key) == n {
			return true
		}
	}
	return false
}
