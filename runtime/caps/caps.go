// Package caps answers, per request, which capabilities the body uses, so
// selection can pass over channels that would drop one.
//
// A read is two steps. A prefilter looks for a few byte needles per
// capability (a key such as "strict" or a value such as "json_schema",
// quotes included) in one pass over the body's quote characters; a body with
// no needle costs that pass and nothing else. Only when a needle hits does a
// structural confirm walk the JSON once, reading the members that matter at
// their exact paths and skipping everything else in place. A needle inside a
// string (a user message quoting "strict") or at the wrong depth never
// counts. Both steps are linear in the body and allocate nothing.
//
// What the confirm cannot establish counts as not used: a body that is not a
// well-formed JSON object reports nothing, and neither does a member of an
// unexpected shape (tools that is not an array, strict given as the string
// "true"). The upstream's own validation answers those requests. The
// confirm delimits strings without checking their contents
// (jsonscan.NewValid): the server has run json.Valid on the body already.
//
// Keys and enum values are compared as raw bytes, so an escaped spelling such
// as "str\u0069ct" is not recognised. No SDK writes one, and a client that
// hid its own capability that way would only downgrade itself. A key given
// twice counts if any occurrence qualifies.
//
// What each route counts is documented beside its reader: chat.go,
// completions.go, responses.go, messages.go.
package caps

import (
	"bytes"
	"math/bits"

	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/plan"
)

// Read returns the capabilities the body uses, for the inbound route.
// It never reports usage_details: that is a profile pin, not a body feature.
func Read(route plan.Route, body []byte) plan.CapSet {
	d := dialectFor(route)
	if d == nil {
		return 0
	}
	want := d.prefilter(body)
	if want == 0 {
		return 0
	}
	return d.confirm(body) & want
}

// Detectable returns the capabilities Read can report for route. A plan
// whose candidates all preserve these need not read the body at all.
func Detectable(route plan.Route) plan.CapSet {
	if d := dialectFor(route); d != nil {
		return d.caps
	}
	return 0
}

// Reader memoizes Read for the life of one request: it reads at most once,
// and only when Caps is called, so a request whose plan never asks pays
// nothing. The zero value reports nothing.
type Reader struct {
	route plan.Route
	body  []byte
	caps  plan.CapSet
	done  bool
}

// Reset prepares r for a new request without reading the body. The body must
// not change until Caps has been called.
func (r *Reader) Reset(route plan.Route, body []byte) {
	*r = Reader{route: route, body: body}
}

// Caps returns the capabilities the body uses, reading it on the first call.
func (r *Reader) Caps() plan.CapSet {
	if !r.done {
		r.caps = Read(r.route, r.body)
		r.done = true
	}
	return r.caps
}

// Body returns the body r reads, for the decision that follows the read
// (what a translation loses of it); it is the caller's, unchanged only
// until the request edits it.
func (r *Reader) Body() []byte { return r.body }

// needle is a byte sequence whose absence proves a capability unused.
type needle struct {
	text []byte
	cap  plan.Cap
}

// shape names the request body a dialect's confirm reads.
type shape uint8

const (
	chatShape shape = iota
	completionsShape
	responsesShape
	messagesShape
)

// dialect is one route's reader: its needles and the body shape its
// confirm reads.
type dialect struct {
	needles []needle
	// byNext maps the byte after a quote to the needles (bit i for
	// needles[i]) that continue with it.
	byNext [256]uint16
	shape  shape
	caps   plan.CapSet
}

func newDialect(sh shape, needles ...needle) *dialect {
	d := &dialect{needles: needles, shape: sh}
	for i, n := range needles {
		d.byNext[n.text[1]] |= 1 << i
		d.caps |= plan.Of(n.cap)
	}
	return d
}

// need builds a needle; text must start with a quote and hold at least one
// more byte.
func need(text string, c plan.Cap) needle { return needle{text: []byte(text), cap: c} }

// Needles are chosen so that every path a confirm accepts contains one:
// either the key it reads (quotes included) or the value it compares.
var (
	chatDialect = newDialect(chatShape,
		need(`"strict"`, plan.CapStrictTools),
		need(`"json_`, plan.CapStructuredOutput),
		need(`"prompt_cache_`, plan.CapPromptCaching),
		need(`"reasoning_effort"`, plan.CapExtendedThinking),
		need(`"thinking"`, plan.CapExtendedThinking),
		need(`"input_audio"`, plan.CapAudioInput),
		need(`"n"`, plan.CapMultiChoice),
	)
	completionsDialect = newDialect(completionsShape,
		need(`"n"`, plan.CapMultiChoice),
		need(`"best_of"`, plan.CapMultiChoice),
	)
	responsesDialect = newDialect(responsesShape,
		need(`"strict"`, plan.CapStrictTools),
		need(`"json_`, plan.CapStructuredOutput),
		need(`"prompt_cache_`, plan.CapPromptCaching),
		need(`"effort"`, plan.CapExtendedThinking),
		need(`"input_audio"`, plan.CapAudioInput),
	)
	messagesDialect = newDialect(messagesShape,
		need(`"strict"`, plan.CapStrictTools),
		need(`"output_`, plan.CapStructuredOutput),
		need(`"cache_control"`, plan.CapPromptCaching),
		need(`"thinking"`, plan.CapExtendedThinking),
	)
)

// dialectFor returns route's reader, or nil for a route whose bodies carry no
// capability (embeddings) or an unknown route.
func dialectFor(route plan.Route) *dialect {
	switch route {
	case plan.RouteChatCompletions:
		return chatDialect
	case plan.RouteCompletions:
		return completionsDialect
	case plan.RouteResponses:
		return responsesDialect
	case plan.RouteMessages:
		return messagesDialect
	}
	return nil
}

// prefilter returns the capabilities whose needles occur in body. Every
// needle starts with a quote, so one pass from quote to quote, with a table
// lookup on the byte after each, finds them all at once; it stops early once
// every capability has a hit.
func (d *dialect) prefilter(body []byte) plan.CapSet {
	var hit plan.CapSet
	for i := 0; hit != d.caps; {
		q := jsonscan.IndexQuote(body[i:])
		if q < 0 || i+q+1 >= len(body) {
			break
		}
		q += i
		i = q + 1
		for set := d.byNext[body[i]]; set != 0; set &= set - 1 {
			n := &d.needles[bits.TrailingZeros16(set)]
			if bytes.HasPrefix(body[q:], n.text) {
				hit |= plan.Of(n.cap)
			}
		}
	}
	return hit
}

// confirm walks body once and returns every capability it establishes
// structurally, or nothing if body is not a well-formed JSON object.
func (d *dialect) confirm(body []byte) plan.CapSet {
	s := jsonscan.NewValid(body)
	if s.Kind() != jsonscan.Object {
		return 0
	}
	var got plan.CapSet
	for m := s.Object(); m.Next(); {
		got |= d.member(&s, m.Key())
	}
	s.End()
	if s.Bad() {
		return 0
	}
	return got
}

// member reads the value of the top-level member key, consuming it whatever
// its shape, and returns the capabilities it confirms. The switch, rather
// than a function value, keeps the scanner on the stack.
func (d *dialect) member(s *jsonscan.Scanner, key []byte) plan.CapSet {
	switch d.shape {
	case chatShape:
		return chatMember(s, key)
	case completionsShape:
		return completionsMember(s, key)
	case responsesShape:
		return responsesMember(s, key)
	case messagesShape:
		return messagesMember(s, key)
	}
	s.Skip()
	return 0
}
