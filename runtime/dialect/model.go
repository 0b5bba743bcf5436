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

// FindModel scans the top level of a JSON object for the "model" key. It
// expects valid JSON (json.Valid first) but stays in bounds on any input,
// and refuses a body that does not scan as one object, nested at most
// jsonscan.MaxDepth deep, as ErrNotObject. A key spelled with escapes
// ("mod\u0065l") is the model key. A second top-level "model" is refused:
// parsers disagree on which copy wins, so the name checked here and the one
// an upstream reads could differ.
func FindModel(body []byte) (ModelField, error) {
	s := jsonscan.NewValid(body)
	if s.Kind() != jsonscan.Object {
		return ModelField{}, ErrNotObject
	}
	var f ModelField
	found := false
	for m := s.Object(); m.Next(); {
		if !jsonscan.Equal(m.Key(), "model") {
			s.Skip()
			continue
		}
		start := s.Pos()
		raw, isString := s.RawString()
		switch {
		case s.Bad():
			return ModelField{}, ErrNotObject
		case found:
			return ModelField{}, ErrDuplicateModel
		}
		name, ok := modelName(raw, isString)
		if !ok {
			return ModelField{}, ErrModelNotString
		}
		f, found = ModelField{Name: name, Start: start, End: s.Pos()}, true
	}
	if s.End(); s.Bad() {
		return ModelField{}, ErrNotObject
	}
	if !found {
		return ModelField{}, ErrNoModel
	}
	return f, nil
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

// AppendWithModel appends body to dst with the model value replaced by
// model: the bytes before and after the value are copied as they are.
func AppendWithModel(dst, body []byte, f ModelField, model string) []byte {
	dst = append(dst, body[:f.Start]...)
	dst = AppendString(dst, model)
	return append(dst, body[f.End:]...)
}

// AppendString appends s as a JSON string literal.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
