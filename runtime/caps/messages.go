package caps

import (
	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/plan"
)

// blockNesting is how many levels of nested content a block may hold that
// can still carry cache_control: a tool_result's content, and a
// search_result inside it.
const blockNesting = 2

// messagesMember confirms capabilities in one top-level member of an
// Anthropic Messages request (docs/wire.md#messages-request). It counts:
//   - prompt_caching: a non-null cache_control at the top level (automatic
//     caching), on a system block, on a tool, or on a message content
//     block, including blocks nested in a tool_result's content
//   - extended_thinking: thinking.type is enabled, adaptive or between_tools
//   - strict_tools: tools[].strict is true
//   - structured_output: output_config.format (or the beta's top-level
//     output_format) has type json_schema or json_object
//
// audio_input and multi_choice do not exist in this dialect.
func messagesMember(s *jsonscan.Scanner, key []byte) plan.CapSet {
	switch string(key) {
	case "cache_control":
		// Top-level cache_control is automatic caching of the prompt.
		return when(present(s), plan.CapPromptCaching)
	case "system":
		return cachedBlocks(s, 0)
	case "messages":
		return messagesCaching(s)
	case "tools":
		return messagesTools(s)
	case "thinking":
		return when(thinkingOn(s), plan.CapExtendedThinking)
	case "output_config":
		// output_config.effort alone is not structured output.
		return when(formatMemberIsJSON(s), plan.CapStructuredOutput)
	case "output_format":
		// The structured-outputs beta put the same format at the top level.
		return when(formatIsJSON(s), plan.CapStructuredOutput)
	}
	s.Skip()
	return 0
}

// messagesCaching reads the messages array and reports whether any content
// block carries cache_control. String content is plain text.
func messagesCaching(s *jsonscan.Scanner) plan.CapSet {
	var got plan.CapSet
	for msgs := s.Array(); msgs.Next(); {
		for msg := s.Object(); msg.Next(); {
			if string(msg.Key()) != "content" {
				s.Skip()
				continue
			}
			got |= cachedBlocks(s, blockNesting)
		}
	}
	return got
}

// cachedBlocks reads an array of content blocks and reports prompt caching
// if any block, or a block nested up to nest levels in its content, carries
// a non-null cache_control.
func cachedBlocks(s *jsonscan.Scanner, nest int) plan.CapSet {
	var got plan.CapSet
	for blocks := s.Array(); blocks.Next(); {
		for block := s.Object(); block.Next(); {
			switch {
			case string(block.Key()) == "cache_control":
				got |= when(present(s), plan.CapPromptCaching)
			case string(block.Key()) == "content" && nest > 0:
				got |= cachedBlocks(s, nest-1)
			default:
				s.Skip()
			}
		}
	}
	return got
}

// messagesTools reads tools: strict set to true on any tool is strict tools,
// and cache_control on any tool is prompt caching.
func messagesTools(s *jsonscan.Scanner) plan.CapSet {
	var got plan.CapSet
	for tools := s.Array(); tools.Next(); {
		for tool := s.Object(); tool.Next(); {
			switch string(tool.Key()) {
			case "strict":
				got |= when(isTrue(s), plan.CapStrictTools)
			case "cache_control":
				got |= when(present(s), plan.CapPromptCaching)
			default:
				s.Skip()
			}
		}
	}
	return got
}

// thinkingOn reads the thinking object and reports whether its type turns
// thinking on: enabled (a fixed budget), adaptive, or between_tools.
// disabled, and any type not known here, is not counted.
func thinkingOn(s *jsonscan.Scanner) bool {
	on := false
	for m := s.Object(); m.Find("type"); {
		v, _ := s.RawString()
		switch string(v) {
		case "enabled", "adaptive", "between_tools":
			on = true
		}
	}
	return on
}
