package translate

import (
	"encoding/json"
	"testing"
)

func TestLowerSchema(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		lowered        bool
	}{
		{"numeric bounds move into the description",
			`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10}},"required":["n"],"additionalProperties":false}`,
			`{"type":"object","properties":{"n":{"type":"integer","description":"{minimum: 1, maximum: 10}"}},"required":["n"],"additionalProperties":false}`, true},
		{"an existing description keeps its text first",
			`{"type":"string","description":"a name","minLength":2,"maxLength":8}`,
			`{"type":"string","description":"a name\n\n{minLength: 2, maxLength: 8}"}`, true},
		{"enum, const and default are kept",
			`{"type":"object","properties":{"u":{"type":"string","enum":["c","f"],"default":"c"},"k":{"const":3}},"required":["u","k"],"additionalProperties":false}`,
			`{"type":"object","properties":{"u":{"type":"string","enum":["c","f"],"default":"c"},"k":{"const":3}},"required":["u","k"],"additionalProperties":false}`, false},
		{"objects get additionalProperties false without a loss",
			`{"type":"object","properties":{"a":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, false},
		{"additionalProperties other than false is advice",
			`{"type":"object","additionalProperties":{"type":"string"}}`,
			`{"type":"object","additionalProperties":false,"description":"{additionalProperties: {\"type\":\"string\"}}"}`, true},
		{"supported formats stay, others advise",
			`{"type":"array","items":{"type":"string","format":"email"},"minItems":1,"maxItems":3}`,
			`{"type":"array","items":{"type":"string","format":"email"},"minItems":1,"description":"{maxItems: 3}"}`, true},
		{"an unsupported format advises",
			`{"type":"string","format":"iri"}`,
			`{"type":"string","description":"{format: \"iri\"}"}`, true},
		{"minItems above 1 advises",
			`{"type":"array","items":{"type":"integer"},"minItems":2}`,
			`{"type":"array","items":{"type":"integer"},"description":"{minItems: 2}"}`, true},
		{"oneOf becomes anyOf, variants lowered",
			`{"oneOf":[{"type":"number","multipleOf":0.5},{"type":"null"}]}`,
			`{"anyOf":[{"type":"number","description":"{multipleOf: 0.5}"},{"type":"null"}]}`, true},
		{"nullable type lists are objects too",
			`{"type":["object","null"],"properties":{"a":{"type":["integer","null"],"exclusiveMinimum":0}},"required":["a"],"additionalProperties":false}`,
			`{"type":["object","null"],"properties":{"a":{"type":["integer","null"],"description":"{exclusiveMinimum: 0}"}},"required":["a"],"additionalProperties":false}`, true},
		{"definitions and refs are lowered in place",
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"$defs":{"P":{"type":"string","pattern":"^a+$"}},"additionalProperties":false}`,
			`{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"$defs":{"P":{"type":"string","description":"{pattern: \"^a+$\"}"}},"additionalProperties":false}`, true},
		{"boolean subschemas pass", `{"type":"object","properties":{"x":true}}`,
			`{"type":"object","properties":{"x":true},"additionalProperties":false}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, lowered, err := LowerSchema(json.RawMessage(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want || lowered != c.lowered {
				t.Errorf("LowerSchema(%s)\n = %s, %v\nwant %s, %v", c.in, out, lowered, c.want, c.lowered)
			}
			if !json.Valid(out) {
				t.Errorf("output is not JSON: %s", out)
			}
		})
	}
}

func TestLowerSchemaRefusesNonSchemas(t *testing.T) {
	for _, in := range []string{`[]`, `"object"`, `{"type":"object","properties":{"a":3}}`, `{"anyOf":{}}`} {
		if out, _, err := LowerSchema(json.RawMessage(in)); err == nil {
			t.Errorf("LowerSchema(%s) = %s, want an error", in, out)
		}
	}
}
