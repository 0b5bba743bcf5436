package realtime

import (
	"strings"

	"github.com/pistra/pistra/runtime/jsonquote"
	"github.com/pistra/pistra/runtime/jsonscan"
)

// A Gemini Live session names its model in its first message, not in its
// URL: {"setup": {"model": "models/<name>", ...}}.

// modelPrefix is how the Live API spells a model's resource name.
const modelPrefix = "models/"

// Setup is a Live session's first message, read for its model.
type Setup struct {
	Msg []byte
	// Model is the name the setup asks for, without "models/".
	Model string
	// lo and hi delimit the model's string token in Msg.
	lo, hi int
}

// ReadSetup reads msg as a Live setup message; ok is false when it is not
// one or names no model.
func ReadSetup(msg []byte) (s Setup, ok bool) {
	sc := jsonscan.New(msg)
	outer := sc.Object()
	if !outer.Find("setup") {
		return s, false
	}
	for m := sc.Object(); m.Next(); {
		if string(m.Key()) != "model" {
			sc.Skip()
			continue
		}
		lo := sc.Pos()
		raw, isString := sc.RawString()
		name, unquoted := jsonscan.Unquote(nil, raw)
		if !isString || !unquoted {
			return s, false
		}
		s = Setup{Msg: msg, Model: strings.TrimPrefix(string(name), modelPrefix), lo: lo, hi: sc.Pos()}
	}
	return s, s.Model != "" && !sc.Bad()
}

// For is the setup message to send for upstream model m: the client's own
// bytes when m is what it asked for, else with only the model replaced.
func (s *Setup) For(m string) []byte {
	if m == s.Model {
		return s.Msg
	}
	out := make([]byte, 0, len(s.Msg)+len(m))
	out = append(out, s.Msg[:s.lo]...)
	out = jsonquote.Append(out, modelPrefix+m)
	return append(out, s.Msg[s.hi:]...)
}
