package realtime

import (
	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/meter"
)

// live reads a Gemini Live server message. Its usageMetadata states the
// usage of the model turn in progress (the prompt counts the session's
// context again each turn, as the API bills it), and a turn may restate
// it as it goes: within a turn the latest figures are the turn's, so what
// is spent is only what grew, and across turns figures add up. A turn
// starts with its first serverContent and ends at turnComplete; figures
// that follow turnComplete, before the next turn's content, restate the
// turn just ended. So the meter is right whether the server reports once
// per turn or a running figure within it.
func (d *decoder) live(b []byte) bool {
	s := jsonscan.New(b)
	var content, usage span
	for m := s.Object(); m.Next(); {
		lo := s.Pos()
		switch string(m.Key()) {
		case "serverContent":
			s.Skip()
			content = span{lo, s.Pos()}
		case "usageMetadata":
			s.Skip()
			usage = span{lo, s.Pos()}
		default:
			s.Skip()
		}
	}
	s.End()
	if s.Bad() {
		return false
	}
	complete := false
	if content.hi > 0 {
		var starts bool
		starts, complete = turnMarks(content.of(b))
		if starts && !d.turnOpen {
			d.turn, d.turnOpen = meter.Usage{}, true
		}
	}
	if usage.hi > 0 {
		d.restate(liveUsage(usage.of(b)))
	}
	if complete {
		d.turnOpen = false
	}
	return true
}

// turnMarks reads whether a serverContent carries the model's turn (or
// anything else of it than its end) and whether it completes the turn.
func turnMarks(b []byte) (starts, complete bool) {
	s := jsonscan.NewValid(b)
	for m := s.Object(); m.Next(); {
		switch string(m.Key()) {
		case "turnComplete":
			complete = s.Kind() == jsonscan.True
			s.Skip()
		default:
			starts = true
			s.Skip()
		}
	}
	return starts, complete
}

// restate takes u as the turn's figures so far and spends what grew.
func (d *decoder) restate(u meter.Usage) {
	if !u.Reported {
		return
	}
	grew := meter.Usage{
		InputTokens: more(u.InputTokens, d.turn.InputTokens), OutputTokens: more(u.OutputTokens, d.turn.OutputTokens),
		TotalTokens:       more(u.TotalTokens, d.turn.TotalTokens),
		CachedInputTokens: more(u.CachedInputTokens, d.turn.CachedInputTokens),
		ReasoningTokens:   more(u.ReasoningTokens, d.turn.ReasoningTokens), Reported: true,
	}
	d.turn = u
	if grew.InputTokens+grew.OutputTokens+grew.TotalTokens > 0 {
		d.add(grew)
	}
}

func more(now, before uint64) uint64 {
	if now > before {
		return now - before
	}
	return 0
}

// liveUsage reads a usageMetadata object: input is the prompt with the
// tool-use prompt, output the response with the thoughts (the reasoning
// subset), as totalTokenCount sums them.
func liveUsage(b []byte) meter.Usage {
	var u meter.Usage
	var prompt, tool, response, thoughts uint64
	s := jsonscan.NewValid(b)
	for m := s.Object(); m.Next(); {
		switch string(m.Key()) {
		case "promptTokenCount":
			prompt, _ = s.Uint()
		case "toolUsePromptTokenCount":
			tool, _ = s.Uint()
		case "responseTokenCount":
			response, _ = s.Uint()
		case "thoughtsTokenCount":
			thoughts, _ = s.Uint()
		case "cachedContentTokenCount":
			u.CachedInputTokens, _ = s.Uint()
		case "totalTokenCount":
			u.TotalTokens, _ = s.Uint()
		default:
			s.Skip()
		}
	}
	u.InputTokens, u.OutputTokens, u.ReasoningTokens = prompt+tool, response+thoughts, thoughts
	u.Reported = u.InputTokens+u.OutputTokens+u.TotalTokens > 0
	return u
}
