package dialect

import (
	"errors"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// ModelField locates the top-level "model" value in a request body, so the
// gateway can read the requested name and splice in an upstream one without
// decoding the rest of the body.
type ModelField struct {
	// Name is the decoded requested model.
	Name string
	// Start and End delimit the value in the body, quotes included.
	Start, End int
}

// Errors FindModel returns; the server maps each to a client error.
var (
	ErrNotObject      = errors.New("the body is not a JSON object")
	ErrNoModel        = errors.New(`the body has no "model" field`)
	ErrModelNotString = errors.New(`"model" is not a string`)
	ErrDuplicateModel = errors.New(`"model" appears more than once`)
)

// Head is what the gateway reads of a request body's top level in one
// pass: the model, to route on and rewrite, and what the body says about
// streaming, to ask for usage on the client's behalf.
type Head struct {
	Model  ModelField
	Stream StreamFields
	// MaxOutput is the largest output limit the body states (max_tokens,
	// max_completion_tokens or max_output_tokens), 0 when it states none:
	// what a budget hold expects the answer to use at most.
	MaxOutput uint64
}

// FindModel is ReadHead's model, for callers that need nothing else.
func FindModel(body []byte) (ModelField, error) {
	h, err := ReadHead(body)
	return h.Model, err
}

// ReadHead scans the top level of a JSON object for the "model" key and
// the streaming fields. It expects valid JSON (json.Valid first) but stays
// in bounds on any input, and refuses a body that does not scan as one
// object, nested at most jsonscan.MaxDepth deep, as ErrNotObject. A key
// spelled with escapes ("mod\u0065l") is the model key. A second top-level
// "model" is refused: parsers disagree on which copy wins, so the name
// checked here and the one an upstream reads could differ.
func ReadHead(body []byte) (Head, error) {
	s := jsonscan.NewValid(body)
	if s.Kind() != jsonscan.Object {
		return Head{}, ErrNotObject
	}
	var h Head
	h.Stream.objectStart = s.Pos() + 1
	found := false
	for m := s.Object(); m.Next(); {
		switch key := m.Key(); {
		case jsonscan.Equal(key, "model"):
			start := s.Pos()
			raw, isString := s.RawString()
			switch {
			case s.Bad():
				return Head{}, ErrNotObject
			case found:
				return Head{}, ErrDuplicateModel
			}
			name, ok := modelName(raw, isString)
			if !ok {
				return Head{}, ErrModelNotString
			}
			h.Model, found = ModelField{Name: name, Start: start, End: s.Pos()}, true
		case jsonscan.Equal(key, "stream"):
			h.Stream.Stream = s.Kind() == jsonscan.True
			s.Skip()
		case jsonscan.Equal(key, "stream_options"):
			h.Stream.readOptions(&s)
		case jsonscan.Equal(key, "max_tokens"), jsonscan.Equal(key, "max_completion_tokens"),
			jsonscan.Equal(key, "max_output_tokens"):
			if n, ok := s.Uint(); ok {
				h.MaxOutput = max(h.MaxOutput, n)
			}
		default:
			s.Skip()
		}
	}
	if s.End(); s.Bad() {
		return Head{}, ErrNotObject
	}
	if !found {
		return Head{}, ErrNoModel
	}
	return h, nil
}

// modelName decodes the name as encoding/json would, refusing a value that
// is not a string or holds an escape JSON does not define. A name short
// enough decodes on the stack, so only the string itself is allocated.
func modelName(raw []byte, isString bool) (string, bool) {
	if !isString {
		return "", false
	}
	var buf [64]byte
	name, ok := jsonscan.Unquote(buf[:0], raw)
	return string(name), ok
}
