package fakeprovider

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestExampleJSONValidates: the generated value validates against schemas
// beyond what the SDK-level tests send.
func TestExampleJSONValidates(t *testing.T) {
	for _, tt := range []struct{ name, schema, want string }{
		{"key order is the schema's", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"boolean"}}}`, `{"z":"example","a":true}`},
		{"exclusive bounds", `{"type":"object","properties":{"i":{"type":"integer","exclusiveMinimum":7,"maximum":8},"n":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}}`, ""},
		{"negative range", `{"type":"integer","maximum":-40}`, "-40"},
		{"multipleOf", `{"type":"integer","minimum":10,"multipleOf":7}`, "14"},
		{"string lengths", `{"type":"array","prefixItems":[{"type":"string","minLength":10},{"type":"string","maxLength":3}]}`, ""},
		{"formats", `{"type":"array","prefixItems":[{"format":"email"},{"format":"uuid"},{"format":"ipv6"},{"format":"date"},{"format":"time"},{"format":"uri"}],"minItems":6}`, ""},
		{"unique items", `{"type":"array","items":{"type":"integer"},"minItems":4,"maxItems":4,"uniqueItems":true}`, "[1,2,3,4]"},
		{"no items allowed", `{"type":"array","maxItems":0}`, "[]"},
		{"nullable type list", `{"type":["null","number"]}`, "1.5"},
		{"only null", `{"type":["null"]}`, "null"},
		{"oneOf and const", `{"oneOf":[{"const":{"k":[1]}},{"type":"string"}]}`, `{"k":[1]}`},
		{"allOf of one", `{"allOf":[{"type":"integer","minimum":5}]}`, "5"},
		{"required without a property", `{"type":"object","required":["x"],"additionalProperties":{"type":"integer"}}`, `{"x":1}`},
		{"boolean schema", `{"type":"object","properties":{"any":true}}`, ""},
		{"recursion through $ref", `{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name","children"],"additionalProperties":false}},"$ref":"#/$defs/node"}`, ""},
		{"recursion through anyOf null", `{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["next"],"additionalProperties":false}`, ""},
		{"definitions and escaped pointer", `{"definitions":{"a/b":{"enum":["x","y"]}},"type":"object","properties":{"v":{"$ref":"#/definitions/a~1b"}}}`, `{"v":"x"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := exampleJSON(json.RawMessage(tt.schema))
			if tt.want != "" && got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			c := jsonschema.NewCompiler()
			c.Draft, c.AssertFormat = jsonschema.Draft2020, true
			if err := c.AddResource("s.json", strings.NewReader(tt.schema)); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile("s.json")
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal([]byte(got), &v); err != nil {
				t.Fatalf("%s is not JSON: %v", got, err)
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: %v", got, err)
			}
		})
	}
}
