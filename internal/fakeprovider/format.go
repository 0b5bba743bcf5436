package fakeprovider

import (
	"encoding/json"
	"strings"
)

// Answer formats a request can ask for: Chat's response_format, the
// Responses API's text.format, Anthropic's output_config.format.
const (
	formatText       = "text"
	formatJSONObject = "json_object"
	formatJSONSchema = "json_schema"
)

// outputFormat is the answer format a request asked for.
type outputFormat struct {
	kind   string
	name   string
	schema json.RawMessage
	strict bool
}

type formatParam struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
	// JSONSchema is where Chat nests name, schema and strict.
	JSONSchema *formatParam `json:"json_schema"`
}

// jsonFragment is the size of the token-sized pieces JSON answers stream
// and are counted in, at the four bytes a token promptTokens assumes.
const jsonFragment = 4

// reply is what the fake answers in this format, cut by stop sequences and
// limit: its text reply, or JSON streamed in token-sized fragments.
func (f outputFormat) reply(lastUser string, stops []string, limit int) reply {
	switch f.kind {
	case formatJSONObject:
		full := string(appendString([]byte(`{"reply":`), ReplyText(lastUser))) + "}"
		return newReply(full, stops, limit, jsonPieces)
	case formatJSONSchema:
		return newReply(exampleJSON(f.schema), stops, limit, jsonPieces)
	}
	return newReply(ReplyText(lastUser), stops, limit, pieces)
}

func jsonPieces(s string) []string { return fragments(s, jsonFragment) }

// readFormat reads an OpenAI format object found at path ("response_format",
// "text.format"); Chat nests its json_schema fields.
func readFormat(raw json.RawMessage, path string, nested bool) (outputFormat, *apiError) {
	if !present(raw) {
		return outputFormat{kind: formatText}, nil
	}
	var p formatParam
	if err := json.Unmarshal(raw, &p); err != nil {
		return outputFormat{}, badRequest("Invalid type for '"+path+"': expected an object.", path)
	}
	f, top := outputFormat{kind: p.Type}, path
	switch p.Type {
	case formatText, formatJSONObject:
		return f, nil
	case formatJSONSchema:
	default:
		return outputFormat{}, badRequest("Invalid value: '"+p.Type+"'. Supported values are: 'text', 'json_object', and 'json_schema'.", path+".type")
	}
	if nested {
		if p.JSONSchema == nil {
			return outputFormat{}, badRequest("Missing required parameter: '"+path+".json_schema'.", path+".json_schema")
		}
		path, p = path+".json_schema", *p.JSONSchema
	}
	f.name, f.schema, f.strict = p.Name, p.Schema, p.Strict
	switch {
	case f.name == "":
		return outputFormat{}, badRequest("Missing required parameter: '"+path+".name'.", path+".name")
	case !present(f.schema) && !nested:
		return outputFormat{}, badRequest("Missing required parameter: '"+path+".schema'.", path+".schema")
	}
	if f.strict {
		if err := checkStrictSchema(f.schema); err != nil {
			return outputFormat{}, badRequest("Invalid schema for response_format '"+f.name+"': "+err.Error(), top)
		}
	}
	return f, nil
}

// requireJSONWord applies OpenAI's rule for json_object: the prompt must
// ask for JSON in words. what names the prompt in the message.
func (f outputFormat) requireJSONWord(c *conversation, what, path, param string) *apiError {
	if f.kind != formatJSONObject || c.mentionsJSON {
		return nil
	}
	return badRequest("'"+what+"' must contain the word 'json' in some form, to use '"+path+"' of type 'json_object'.", param)
}

// responsesFormat reads text.format, returning it also as sent, for the
// response to echo.
func (r *wireRequest) responsesFormat(c *conversation) (outputFormat, json.RawMessage, *apiError) {
	var raw json.RawMessage
	if r.Text != nil {
		raw = r.Text.Format
	}
	f, err := readFormat(raw, "text.format", false)
	if err == nil {
		err = f.requireJSONWord(c, "input", "text.format", "input")
	}
	return f, raw, err
}

// anthropicFormat reads output_config.format, which only takes a JSON
// schema within Anthropic's limits.
func (r *wireRequest) anthropicFormat() (outputFormat, *apiError) {
	if r.OutputConfig == nil || !present(r.OutputConfig.Format) {
		return outputFormat{kind: formatText}, nil
	}
	var p formatParam
	switch err := json.Unmarshal(r.OutputConfig.Format, &p); {
	case err != nil:
		return outputFormat{}, badRequest("output_config.format: Input should be an object", "")
	case p.Type != formatJSONSchema:
		return outputFormat{}, badRequest("output_config.format.type: Input should be 'json_schema'", "")
	case !present(p.Schema):
		return outputFormat{}, badRequest("output_config.format.schema: Field required", "")
	}
	if err := checkAnthropicSchema(p.Schema); err != nil {
		return outputFormat{}, badRequest("output_config.format.schema: "+err.Error(), "")
	}
	return outputFormat{kind: formatJSONSchema, schema: p.Schema}, nil
}

// containsJSONWord reports whether text says "json", in any case.
func containsJSONWord(text string) bool {
	for i := 0; i+4 <= len(text); i++ {
		if strings.EqualFold(text[i:i+4], "json") {
			return true
		}
	}
	return false
}
