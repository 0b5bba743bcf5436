package fakeprovider

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fake answers structured output, and fills tool-call arguments, with a
// value that validates against the request's JSON schema: every property in
// schema order (OpenAI writes keys in the order the schema lists them), the
// first enum value, const, the first anyOf branch, $ref followed, bounds and
// lengths kept. It does not generate strings for a pattern.

// schemaNode is the part of a JSON schema the fake reads.
type schemaNode struct {
	Type                 json.RawMessage   `json:"type"`
	Enum                 []json.RawMessage `json:"enum"`
	Const                json.RawMessage   `json:"const"`
	Ref                  string            `json:"$ref"`
	AnyOf                []json.RawMessage `json:"anyOf"`
	OneOf                []json.RawMessage `json:"oneOf"`
	AllOf                []json.RawMessage `json:"allOf"`
	Properties           json.RawMessage   `json:"properties"`
	Required             []string          `json:"required"`
	AdditionalProperties json.RawMessage   `json:"additionalProperties"`
	Items                json.RawMessage   `json:"items"`
	PrefixItems          []json.RawMessage `json:"prefixItems"`
	Defs                 json.RawMessage   `json:"$defs"`
	Definitions          json.RawMessage   `json:"definitions"`
	Format               string            `json:"format"`
	// Exclusive bounds are numbers since draft 6, booleans before: raw.
	Minimum          *float64        `json:"minimum"`
	Maximum          *float64        `json:"maximum"`
	ExclusiveMinimum json.RawMessage `json:"exclusiveMinimum"`
	ExclusiveMaximum json.RawMessage `json:"exclusiveMaximum"`
	MultipleOf       *float64        `json:"multipleOf"`
	MinLength        *int            `json:"minLength"`
	MaxLength        *int            `json:"maxLength"`
	MinItems         *int            `json:"minItems"`
	MaxItems         *int            `json:"maxItems"`
}

// parseSchema reads a schema; a boolean schema, or one the fake cannot
// read, is the empty schema, which any value satisfies.
func parseSchema(raw json.RawMessage) schemaNode {
	var n schemaNode
	if len(raw) > 0 && raw[0] == '{' {
		_ = json.Unmarshal(raw, &n)
	}
	return n
}

// types returns the types the schema lists.
func (n *schemaNode) types() []string {
	var one string
	if json.Unmarshal(n.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(n.Type, &many)
	return many
}

// typeName is the type the fake generates: the first non-null one listed,
// else what the keywords imply.
func (n *schemaNode) typeName() string {
	types := n.types()
	for _, t := range types {
		if t != "null" {
			return t
		}
	}
	switch {
	case len(types) > 0:
		return "null"
	case present(n.Properties) || len(n.Required) > 0:
		return "object"
	case present(n.Items) || len(n.PrefixItems) > 0:
		return "array"
	}
	return "string"
}

// objectKeys returns the keys of a JSON object in the order they appear.
func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		var skip json.RawMessage
		if err != nil || !ok || dec.Decode(&skip) != nil {
			return keys
		}
		keys = append(keys, key)
	}
	return keys
}

const (
	// optionalDepth is the nesting past which optional properties and array
	// items are left out, so that recursive schemas end.
	optionalDepth = 6
	// maxDepth stops schemas that cannot end (a required recursion).
	maxDepth = 32
)

type schemaGen struct {
	root json.RawMessage
}

// exampleJSON returns compact JSON text that validates against schema.
func exampleJSON(schema json.RawMessage) string {
	g := schemaGen{root: schema}
	return string(g.value(nil, schema, 0, 0))
}

// value appends a value for raw; nth varies scalars, so that array items
// differ from one another.
func (g *schemaGen) value(b []byte, raw json.RawMessage, depth, nth int) []byte {
	n := parseSchema(raw)
	switch {
	case depth > maxDepth:
		return append(b, "null"...)
	case n.Ref != "":
		return g.value(b, g.resolve(n.Ref), depth+1, nth)
	case len(n.Const) > 0:
		return append(b, n.Const...)
	case len(n.Enum) > 0:
		return append(b, n.Enum[nth%len(n.Enum)]...)
	case len(n.AnyOf) > 0:
		return g.value(b, branch(n.AnyOf, depth), depth+1, nth)
	case len(n.OneOf) > 0:
		return g.value(b, branch(n.OneOf, depth), depth+1, nth)
	case len(n.AllOf) == 1:
		return g.value(b, n.AllOf[0], depth+1, nth)
	}
	switch n.typeName() {
	case "object":
		return g.object(b, &n, depth)
	case "array":
		return g.array(b, &n, depth)
	case "integer":
		return strconv.AppendFloat(b, numberExample(&n, true, nth), 'f', -1, 64)
	case "number":
		return strconv.AppendFloat(b, numberExample(&n, false, nth), 'f', -1, 64)
	case "boolean":
		return strconv.AppendBool(b, nth%2 == 0)
	case "null":
		return append(b, "null"...)
	}
	return appendString(b, stringExample(&n, nth))
}

// branch picks the first alternative, or once deep a null one, which ends
// a recursion.
func branch(alternatives []json.RawMessage, depth int) json.RawMessage {
	if depth >= optionalDepth {
		for _, a := range alternatives {
			if n := parseSchema(a); n.typeName() == "null" && n.Ref == "" {
				return a
			}
		}
	}
	return alternatives[0]
}

// resolve follows a local $ref ("#", "#/$defs/x", any JSON pointer into
// the root); one it cannot follow is the empty schema.
func (g *schemaGen) resolve(ref string) json.RawMessage {
	pointer, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	cur := g.root
	for tok := range strings.SplitSeq(strings.TrimPrefix(pointer, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		var arr []json.RawMessage
		if json.Unmarshal(cur, &obj) == nil {
			cur = obj[tok]
		} else if i, err := strconv.Atoi(tok); err == nil && json.Unmarshal(cur, &arr) == nil && i >= 0 && i < len(arr) {
			cur = arr[i]
		} else {
			return nil
		}
	}
	return cur
}

func (g *schemaGen) object(b []byte, n *schemaNode, depth int) []byte {
	var props map[string]json.RawMessage
	_ = json.Unmarshal(n.Properties, &props)
	b = append(b, '{')
	first := true
	add := func(key string, schema json.RawMessage) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, key)
		b = append(b, ':')
		b = g.value(b, schema, depth+1, 0)
	}
	for _, k := range objectKeys(n.Properties) {
		if depth < optionalDepth || slices.Contains(n.Required, k) {
			add(k, props[k])
		}
	}
	// A required name without a property schema takes what
	// additionalProperties allows.
	for _, k := range n.Required {
		if _, ok := props[k]; !ok {
			add(k, n.AdditionalProperties)
		}
	}
	return append(b, '}')
}

func (g *schemaGen) array(b []byte, n *schemaNode, depth int) []byte {
	count := max(len(n.PrefixItems), 1)
	if depth >= optionalDepth {
		count = 0
	}
	if n.MinItems != nil {
		count = max(count, *n.MinItems)
	}
	if n.MaxItems != nil {
		count = min(count, *n.MaxItems)
	}
	b = append(b, '[')
	for i := range count {
		if i > 0 {
			b = append(b, ',')
		}
		item := n.Items
		if i < len(n.PrefixItems) {
			item = n.PrefixItems[i]
		}
		b = g.value(b, item, depth+1, i)
	}
	return append(b, ']')
}

// stringExample is "example" (a format's example when the schema names
// one), numbered past the first item and fitted to the length bounds.
func stringExample(n *schemaNode, nth int) string {
	s, ok := formatExamples[n.Format]
	if !ok {
		s = "example"
		if nth > 0 {
			s += " " + strconv.Itoa(nth+1)
		}
	}
	if n.MinLength != nil && utf8.RuneCountInString(s) < *n.MinLength {
		s += strings.Repeat("x", *n.MinLength-utf8.RuneCountInString(s))
	}
	if n.MaxLength != nil && utf8.RuneCountInString(s) > *n.MaxLength {
		s = string([]rune(s)[:max(*n.MaxLength, 0)])
	}
	return s
}

var formatExamples = map[string]string{
	"date-time": "2026-01-01T12:00:00Z",
	"date":      "2026-01-01",
	"time":      "12:00:00Z",
	"duration":  "PT1H",
	"email":     "user@example.com",
	"hostname":  "example.com",
	"uri":       "https://example.com/",
	"ipv4":      "192.0.2.1",
	"ipv6":      "2001:db8::1",
	"uuid":      "123e4567-e89b-42d3-a456-426614174000",
}

// numberExample is 1.5 (integers 1), plus nth, moved inside the bounds and
// onto multipleOf.
func numberExample(n *schemaNode, integer bool, nth int) float64 {
	v, step := 1.5+float64(nth), 0.0
	if integer {
		v, step = 1+float64(nth), 1
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	loOpen, hiOpen := false, false
	if n.Minimum != nil {
		lo = *n.Minimum
	}
	if x, err := strconv.ParseFloat(string(n.ExclusiveMinimum), 64); err == nil && x >= lo {
		lo, loOpen = x, true
	}
	if n.Maximum != nil {
		hi = *n.Maximum
	}
	if x, err := strconv.ParseFloat(string(n.ExclusiveMaximum), 64); err == nil && x <= hi {
		hi, hiOpen = x, true
	}
	inside := func(v float64) bool {
		return (v > lo || v == lo && !loOpen) && (v < hi || v == hi && !hiOpen)
	}
	switch {
	case inside(v):
	case !math.IsInf(lo, 0) && !math.IsInf(hi, 0):
		v = (lo + hi) / 2
	case !math.IsInf(lo, 0):
		v = lo
		if loOpen {
			v++
		}
	default:
		v = hi
		if hiOpen {
			v--
		}
	}
	if n.MultipleOf != nil && *n.MultipleOf > 0 {
		step = *n.MultipleOf
	}
	if step > 0 {
		if up := math.Ceil(v/step) * step; inside(up) {
			v = up
		} else {
			v = math.Floor(v/step) * step
		}
	}
	return v
}
