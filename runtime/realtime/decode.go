package realtime

import (
	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// Why a decoder turned itself off, as pistra_session_meter_off_total
// labels it.
const (
	OffBinary   = "binary_frame"
	OffTooLarge = "frame_too_large"
	OffInvalid  = "invalid_json"
)

// maxDecoded bounds the message the decoder assembles to read; a longer
// one that could carry usage turns the decoder off (see decoder.part).
const maxDecoded = 1 << 20

// decoder reads the usage an upstream reports in a session's messages as
// they pass, and never touches them: it reads a copy of what the pump
// relays. It folds what it reads into whole-session usage, handing each
// increment to spend.
type decoder struct {
	route plan.Route
	// off is why the decoder stopped, "" while it reads.
	off string
	buf []byte
	// long is set while a message longer than maxDecoded passes; skip
	// while one whose start shows it carries no usage does.
	long, skip bool
	// total is the session's usage so far.
	total meter.Usage
	// turn is Live's figures for the turn in progress (or just ended,
	// until the next one starts): a turn's usageMetadata restates it, so
	// only what grew is new.
	turn     meter.Usage
	turnOpen bool
	spend    func(delta *meter.Usage)
	// stopped is told once, when the decoder turns off.
	stopped func(why string)
}

// text reports whether a message of kind binary may still carry the
// protocol's JSON: Gemini Live sends its server messages in binary frames
// as often as in text ones; OpenAI Realtime's are text only.
func (d *decoder) accepts(binary bool) bool { return !binary || d.route == plan.RouteLive }

// part takes one piece of a message as it is relayed; first and last are
// set on the message's first and last pieces (a message that fits the
// relay's buffer is one piece, read in place). A longer one is assembled
// up to maxDecoded, unless its start shows it carries no usage.
func (d *decoder) part(binary bool, p []byte, first, last bool) {
	if d == nil || d.off != "" {
		return
	}
	if first && !d.accepts(binary) {
		d.stop(OffBinary)
		return
	}
	if first && last {
		d.message(p)
		return
	}
	if first {
		d.buf, d.long, d.skip = d.buf[:0], false, !d.mayCarryUsage(p)
	}
	if d.skip {
		return
	}
	if !d.long && len(d.buf)+len(p) > maxDecoded {
		d.long = true
	}
	if !d.long {
		d.buf = append(d.buf, p...)
	}
	if !last {
		return
	}
	if d.long {
		d.stop(OffTooLarge) // it could have carried usage, and it was not read
	} else {
		d.message(d.buf)
	}
	if cap(d.buf) > keptBuffer {
		d.buf = nil // a long message's buffer is not kept for the session's life
	}
}

// keptBuffer is the largest assembly buffer a session keeps between
// messages.
const keptBuffer = 64 << 10

func (d *decoder) stop(why string) {
	d.off = why
	d.stopped(why)
}

// mayCarryUsage tells, from the start of a long message, whether it could
// be one the meter reads. A Realtime event names its type first (the
// SDKs and the API write it so); one whose type is not a usage event is
// relayed unread. Any Live message can carry usageMetadata, anywhere.
func (d *decoder) mayCarryUsage(head []byte) bool {
	if d.route == plan.RouteLive {
		return true
	}
	s := jsonscan.NewValid(head)
	m := s.Object()
	if !m.Next() || string(m.Key()) != "type" {
		return true
	}
	t, _ := s.RawString()
	return usageEvent(string(t))
}

func usageEvent(t string) bool {
	return t == "response.done" || t == "conversation.item.input_audio_transcription.completed"
}

// message reads one whole message.
func (d *decoder) message(b []byte) {
	var ok bool
	if d.route == plan.RouteLive {
		ok = d.live(b)
	} else {
		ok = d.realtime(b)
	}
	if !ok {
		d.stop(OffInvalid)
	}
}

// span is a member's raw value in a message.
type span struct{ lo, hi int }

func (sp span) of(b []byte) []byte { return b[sp.lo:sp.hi] }

// realtime reads an OpenAI Realtime server event: response.done carries
// one response's usage at response.usage, a finished input transcription
// its own at usage (tokens only; a duration is not tokens). Each is that
// response's or transcription's alone, so they add up.
func (d *decoder) realtime(b []byte) bool {
	s := jsonscan.New(b)
	var typ []byte
	var resp, usage span
	for m := s.Object(); m.Next(); {
		lo := s.Pos()
		switch string(m.Key()) {
		case "type":
			typ, _ = s.RawString()
		case "response":
			s.Skip()
			resp = span{lo, s.Pos()}
		case "usage":
			s.Skip()
			usage = span{lo, s.Pos()}
		default:
			s.Skip()
		}
	}
	s.End()
	if s.Bad() || typ == nil {
		return false
	}
	switch string(typ) {
	case "response.done":
		if resp.hi > 0 {
			d.add(realtimeUsage(member(resp.of(b), "usage")))
		}
	case "conversation.item.input_audio_transcription.completed":
		if usage.hi > 0 {
			d.add(realtimeUsage(usage.of(b)))
		}
	}
	return true
}

// member is the raw value of obj's member name, nil when absent.
func member(obj []byte, name string) []byte {
	s := jsonscan.NewValid(obj)
	m := s.Object()
	if !m.Find(name) {
		return nil
	}
	lo := s.Pos()
	s.Skip()
	return obj[lo:s.Pos()]
}

// realtimeUsage reads a Realtime usage object: cached tokens are a subset
// of the input.
func realtimeUsage(b []byte) meter.Usage {
	var u meter.Usage
	if b == nil {
		return u
	}
	s := jsonscan.NewValid(b)
	for m := s.Object(); m.Next(); {
		switch string(m.Key()) {
		case "input_tokens":
			u.InputTokens, _ = s.Uint()
		case "output_tokens":
			u.OutputTokens, _ = s.Uint()
		case "total_tokens":
			u.TotalTokens, _ = s.Uint()
		case "input_token_details":
			for dm := s.Object(); dm.Next(); {
				if string(dm.Key()) == "cached_tokens" {
					u.CachedInputTokens, _ = s.Uint()
				} else {
					s.Skip()
				}
			}
		default:
			s.Skip()
		}
	}
	u.Reported = u.InputTokens+u.OutputTokens+u.TotalTokens > 0
	return u
}

// add takes u as new usage.
func (d *decoder) add(u meter.Usage) {
	if !u.Reported {
		return
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	d.total.InputTokens += u.InputTokens
	d.total.OutputTokens += u.OutputTokens
	d.total.TotalTokens += u.TotalTokens
	d.total.CachedInputTokens += u.CachedInputTokens
	d.total.ReasoningTokens += u.ReasoningTokens
	d.total.Reported = true
	d.spend(&u)
}
