package fakeprovider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The real APIs refuse schemas their constrained decoding cannot follow,
// with a 400 before generating; the fake refuses the same ones.

// walkSchema calls visit on raw and every subschema in it, each with the
// keywords that lead there, and stops at the first error.
func walkSchema(raw json.RawMessage, path []string, visit func(n *schemaNode, path []string) error) error {
	n := parseSchema(raw)
	if err := visit(&n, path); err != nil {
		return err
	}
	for _, group := range []struct {
		key string
		raw json.RawMessage
	}{{"properties", n.Properties}, {"$defs", n.Defs}, {"definitions", n.Definitions}} {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(group.raw, &m)
		for _, k := range objectKeys(group.raw) {
			if err := walkSchema(m[k], append(slices.Clip(path), group.key, k), visit); err != nil {
				return err
			}
		}
	}
	for _, group := range []struct {
		key  string
		list []json.RawMessage
	}{{"anyOf", n.AnyOf}, {"oneOf", n.OneOf}, {"allOf", n.AllOf}, {"prefixItems", n.PrefixItems}} {
		for i, sub := range group.list {
			if err := walkSchema(sub, append(slices.Clip(path), group.key, fmt.Sprint(i)), visit); err != nil {
				return err
			}
		}
	}
	for _, single := range []struct {
		key string
		raw json.RawMessage
	}{{"items", n.Items}, {"additionalProperties", n.AdditionalProperties}} {
		if len(single.raw) > 0 && single.raw[0] == '{' {
			if err := walkSchema(single.raw, append(slices.Clip(path), single.key), visit); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkStrictSchema applies OpenAI's strict mode: the root is an object,
// and every object sets additionalProperties false and requires each of its
// properties. Errors read as OpenAI's do after "Invalid schema for ...: ".
func checkStrictSchema(schema json.RawMessage) error {
	root := parseSchema(schema)
	if got := root.types(); !slices.Equal(got, []string{"object"}) || len(root.AnyOf) > 0 {
		return fmt.Errorf(`schema must be a JSON Schema of 'type: "object"', got 'type: "%s"'.`, strings.Join(got, ", "))
	}
	return walkSchema(schema, nil, func(n *schemaNode, path []string) error {
		if !slices.Contains(n.types(), "object") {
			return nil
		}
		if string(bytes.TrimSpace(n.AdditionalProperties)) != "false" {
			return fmt.Errorf("In context=%s, 'additionalProperties' is required to be supplied and to be false.", pythonTuple(path))
		}
		for _, k := range objectKeys(n.Properties) {
			if !slices.Contains(n.Required, k) {
				return fmt.Errorf("In context=%s, 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", pythonTuple(path), k)
			}
		}
		return nil
	})
}

// pythonTuple writes a path as OpenAI's messages do: ('properties', 'a').
func pythonTuple(path []string) string {
	if len(path) == 0 {
		return "()"
	}
	quoted := make([]string, len(path))
	for i, p := range path {
		quoted[i] = "'" + p + "'"
	}
	if len(path) == 1 {
		return "(" + quoted[0] + ",)"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}

// checkAnthropicSchema applies Anthropic's limits for structured output:
// every object says additionalProperties false, explicitly; numeric and
// length constraints are not supported, nor minItems above 1.
func checkAnthropicSchema(schema json.RawMessage) error {
	return walkSchema(schema, nil, func(n *schemaNode, _ []string) error {
		if slices.Contains(n.types(), "object") {
			switch ap := string(bytes.TrimSpace(n.AdditionalProperties)); ap {
			case "false":
			case "":
				return errors.New("For 'object' type, 'additionalProperties' must be explicitly set to false")
			default:
				return fmt.Errorf("For 'object' type, 'additionalProperties: %s' is not supported. Please set 'additionalProperties' to false", ap)
			}
		}
		for _, k := range []struct {
			name string
			set  bool
		}{
			{"minimum", n.Minimum != nil}, {"maximum", n.Maximum != nil},
			{"exclusiveMinimum", len(n.ExclusiveMinimum) > 0}, {"exclusiveMaximum", len(n.ExclusiveMaximum) > 0},
			{"multipleOf", n.MultipleOf != nil}, {"minLength", n.MinLength != nil}, {"maxLength", n.MaxLength != nil},
			{"maxItems", n.MaxItems != nil}, {"minItems", n.MinItems != nil && *n.MinItems > 1},
		} {
			if k.set {
				return fmt.Errorf("'%s' is not supported in structured output schemas", k.name)
			}
		}
		return nil
	})
}

// checkStrictTools applies checkAnthropicSchema to the input schema of
// every tool marked strict, which Anthropic holds to the same limits.
func checkStrictTools(raw json.RawMessage) *apiError {
	var tools []wireTool
	if !present(raw) || json.Unmarshal(raw, &tools) != nil {
		return nil // chooseTool reports malformed tools
	}
	for i, t := range tools {
		if !t.Strict || !present(t.InputSchema) {
			continue
		}
		if err := checkAnthropicSchema(t.InputSchema); err != nil {
			return badRequest(fmt.Sprintf("tools.%d.custom.input_schema: %s", i, err), "")
		}
	}
	return nil
}
