package translate

import (
	"encoding/json"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
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

// TestOpenAIToAnthropicLowersStrictSchemas: a strict tool's schema and a
// response_format schema reach Anthropic lowered (integer bounds, which
// OpenAI's strict mode takes and Anthropic's refuses with a 400, move into
// the description), a tool that is not strict keeps its schema whole, and
// RequestLosses declares strict_tools and structured_output lost for that
// request, but not for schemas of portable keywords.
func TestOpenAIToAnthropicLowersStrictSchemas(t *testing.T) {
	bounded := `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":5}},"required":["n"],"additionalProperties":false}`
	lowered := `{"type":"object","properties":{"n":{"type":"integer","description":"{minimum: 1, maximum: 5}"}},"required":["n"],"additionalProperties":false}`
	portable := `{"type":"object","properties":{"u":{"type":"string","enum":["c","f"]}},"required":["u"],"additionalProperties":false}`
	body := func(schema, format string) string {
		return `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` +
			`{"type":"function","function":{"name":"strict","strict":true,"parameters":` + schema + `}},` +
			`{"type":"function","function":{"name":"loose","parameters":` + bounded + `}}],` +
			`"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":` + format + `}}}`
	}
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		OutputConfig struct {
			Format struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
	}
	raw, _, err := OpenAIToAnthropicRequest(nil, []byte(body(bounded, bounded)), probeOptions)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 2 || string(out.Tools[0].InputSchema) != lowered || string(out.Tools[1].InputSchema) != bounded ||
		string(out.OutputConfig.Format.Schema) != lowered {
		t.Errorf("translated %s\nwant the strict tool and the format lowered to %s, the loose tool whole", raw, lowered)
	}
	used := plan.Of(plan.CapStrictTools, plan.CapStructuredOutput)
	for _, c := range []struct {
		schema, format string
		want           plan.CapSet
	}{
		{bounded, bounded, used},
		{bounded, portable, plan.Of(plan.CapStrictTools)},
		{portable, bounded, plan.Of(plan.CapStructuredOutput)},
		{portable, portable, 0},
	} {
		if got := RequestLosses(plan.TranslateOpenAIAnthropic, []byte(body(c.schema, c.format)), used); got != c.want {
			t.Errorf("tool %s, format %s: RequestLosses %v, want %v", c.schema, c.format, got, c.want)
		}
	}
	if got := RequestLosses(plan.TranslateAnthropicOpenAI, []byte(body(bounded, bounded)), used); got != 0 {
		t.Errorf("anthropic_openai lowers nothing, RequestLosses says %v", got)
	}
}

// TestResponsesToAnthropicDeclaresLoweredSchemasLost: the Responses pair
// lowers a strict function tool's schema and text.format's, so a request
// whose schema needed it loses strict_tools or structured_output, as on
// the chat pair; a tool without strict is sent whole and loses nothing.
func TestResponsesToAnthropicDeclaresLoweredSchemasLost(t *testing.T) {
	bounded := `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`
	portable := `{"type":"object","properties":{"u":{"type":"string","enum":["c","f"]}},"required":["u"],"additionalProperties":false}`
	body := func(strict, schema, format string) string {
		return `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","strict":` + strict + `,"parameters":` + schema + `}],` +
			`"text":{"format":{"type":"json_schema","name":"x","strict":true,"schema":` + format + `}}}`
	}
	used := plan.Of(plan.CapStrictTools, plan.CapStructuredOutput)
	for _, c := range []struct {
		strict, schema, format string
		want                   plan.CapSet
	}{
		{"true", bounded, bounded, used},
		{"true", bounded, portable, plan.Of(plan.CapStrictTools)},
		{"false", bounded, portable, 0},
		{"true", portable, bounded, plan.Of(plan.CapStructuredOutput)},
		{"true", portable, portable, 0},
	} {
		if got := RequestLosses(plan.TranslateResponsesAnthropic, []byte(body(c.strict, c.schema, c.format)), used); got != c.want {
			t.Errorf("strict %s, tool %s, format %s: RequestLosses %v, want %v", c.strict, c.schema, c.format, got, c.want)
		}
	}
	if got := RequestLosses(plan.TranslateAnthropicResponses, []byte(body("true", bounded, bounded)), used); got != 0 {
		t.Errorf("anthropic_responses lowers nothing, RequestLosses says %v", got)
	}
}
