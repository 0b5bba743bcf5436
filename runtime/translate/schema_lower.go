package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// LowerSchema rewrites a JSON Schema into the subset Anthropic's strict mode
// (strict tools, output_config.format) accepts, as Anthropic's Python SDK
// does before it sends one: type, enum, const, default, description, title,
// required, local $ref, $defs and definitions, anyOf and allOf are kept
// (oneOf becomes anyOf); objects keep their properties and get
// additionalProperties false; strings keep a supported format; arrays keep
// items and a minItems of 0 or 1. Every other keyword moves into the
// description as {keyword: value, ...}, so the model still reads it but the
// upstream no longer enforces it. lowered reports whether any keyword moved
// (or oneOf became anyOf): the schema then constrains less than the client
// asked, which a translator declares as a loss of strict_tools.
//
// Keys keep their order, so the same schema lowers to the same bytes. An
// error means a subschema is neither an object nor a boolean.
func LowerSchema(schema json.RawMessage) (out json.RawMessage, lowered bool, err error) {
	var l schemaLowerer
	out, err = l.lower(schema, "schema")
	return out, l.lowered, err
}

// anthropicStringFormats are the string formats Anthropic's strict mode
// enforces.
var anthropicStringFormats = []string{
	"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid",
}

type schemaLowerer struct{ lowered bool }

type schemaMember struct {
	key string
	val json.RawMessage
}

// lower lowers one subschema found at path (for errors).
func (l *schemaLowerer) lower(raw json.RawMessage, path string) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "true" || string(raw) == "false" {
		return raw, nil
	}
	in, err := schemaMembers(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	types := schemaTypes(in)
	var kept, moved []schemaMember
	for _, m := range in {
		val, keep, err := l.keyword(m, types, in, path)
		if err != nil {
			return nil, err
		}
		switch {
		case keep:
			kept = append(kept, schemaMember{m.key, val})
			if m.key == "oneOf" {
				kept[len(kept)-1].key = "anyOf"
				l.lowered = true
			}
		case m.key != "$schema" && m.key != "$comment": // annotations for tools, not constraints
			moved = append(moved, m)
		}
	}
	if slices.Contains(types, "object") && !hasMember(kept, "additionalProperties") {
		kept = append(kept, schemaMember{"additionalProperties", json.RawMessage("false")})
	}
	if len(moved) > 0 {
		l.lowered = true
		if kept, err = withAdvice(kept, moved); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return writeMembers(kept), nil
}

// keyword decides one member of a subschema: whether it stays, and its
// value once its own subschemas are lowered.
func (l *schemaLowerer) keyword(m schemaMember, types []string, siblings []schemaMember, path string) (json.RawMessage, bool, error) {
	sub := path + "." + m.key
	switch m.key {
	case "type", "enum", "const", "default", "description", "title", "required", "$ref":
		return m.val, true, nil
	case "anyOf", "allOf":
		v, err := l.lowerList(m.val, sub)
		return v, err == nil, err
	case "oneOf":
		if hasMember(siblings, "anyOf") {
			return nil, false, nil // both given: anyOf stands, oneOf advises
		}
		v, err := l.lowerList(m.val, sub)
		return v, err == nil, err
	case "$defs", "definitions":
		v, err := l.lowerMap(m.val, sub)
		return v, err == nil, err
	case "properties":
		if !slices.Contains(types, "object") {
			return nil, false, nil
		}
		v, err := l.lowerMap(m.val, sub)
		return v, err == nil, err
	case "additionalProperties":
		return m.val, slices.Contains(types, "object") && string(bytes.TrimSpace(m.val)) == "false", nil
	case "items":
		if !slices.Contains(types, "array") || bytes.HasPrefix(bytes.TrimSpace(m.val), []byte("[")) {
			return nil, false, nil
		}
		v, err := l.lower(m.val, sub)
		return v, err == nil, err
	case "minItems":
		n := string(bytes.TrimSpace(m.val))
		return m.val, slices.Contains(types, "array") && (n == "0" || n == "1"), nil
	case "format":
		var f string
		_ = json.Unmarshal(m.val, &f)
		return m.val, slices.Contains(types, "string") && slices.Contains(anthropicStringFormats, f), nil
	}
	return nil, false, nil
}

// lowerList lowers an array of subschemas.
func (l *schemaLowerer) lowerList(raw json.RawMessage, path string) (json.RawMessage, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: must be an array of schemas", path)
	}
	out := []byte{'['}
	for i, s := range list {
		v, err := l.lower(s, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
	}
	return append(out, ']'), nil
}

// lowerMap lowers an object of named subschemas, keeping their order.
func (l *schemaLowerer) lowerMap(raw json.RawMessage, path string) (json.RawMessage, error) {
	in, err := schemaMembers(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range in {
		if in[i].val, err = l.lower(in[i].val, path+"."+in[i].key); err != nil {
			return nil, err
		}
	}
	return writeMembers(in), nil
}

// withAdvice appends the moved keywords to kept's description (creating
// it where there was none) as {keyword: value, ...}, values as JSON.
func withAdvice(kept, moved []schemaMember) ([]schemaMember, error) {
	var advice strings.Builder
	advice.WriteByte('{')
	for i, m := range moved {
		if i > 0 {
			advice.WriteString(", ")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.val); err != nil {
			return nil, err
		}
		advice.WriteString(m.key + ": " + compact.String())
	}
	advice.WriteByte('}')
	i := slices.IndexFunc(kept, func(m schemaMember) bool { return m.key == "description" })
	if i < 0 {
		kept, i = append(kept, schemaMember{key: "description"}), len(kept)
	}
	var desc string
	if kept[i].val != nil {
		if err := json.Unmarshal(kept[i].val, &desc); err != nil {
			return nil, fmt.Errorf("description must be a string")
		}
		desc += "\n\n"
	}
	v, err := json.Marshal(desc + advice.String())
	kept[i].val = v
	return kept, err
}

// schemaMembers reads a JSON object's members in order.
func schemaMembers(raw json.RawMessage) ([]schemaMember, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("must be a JSON object or a boolean")
	}
	var out []schemaMember
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		m := schemaMember{key: t.(string)}
		if err := dec.Decode(&m.val); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// schemaTypes is a subschema's type, given as a name or a list of names.
func schemaTypes(ms []schemaMember) []string {
	i := slices.IndexFunc(ms, func(m schemaMember) bool { return m.key == "type" })
	if i < 0 {
		return nil
	}
	var one string
	if json.Unmarshal(ms[i].val, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(ms[i].val, &many)
	return many
}

func hasMember(ms []schemaMember, key string) bool {
	return slices.ContainsFunc(ms, func(m schemaMember) bool { return m.key == key })
}

func writeMembers(ms []schemaMember) json.RawMessage {
	out := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(m.key)
		out = append(append(append(out, k...), ':'), m.val...)
	}
	return append(out, '}')
}
