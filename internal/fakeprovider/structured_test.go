package fakeprovider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// reportSchema uses every kind of schema structured output takes, within
// both OpenAI's strict rules and Anthropic's limits.
func reportSchema() map[string]any {
	closed := func(props map[string]any) map[string]any {
		required := make([]string, 0, len(props))
		for k := range props {
			required = append(required, k)
		}
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	}
	s := closed(map[string]any{
		"city":        map[string]any{"type": "string"},
		"unit":        map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		"temperature": map[string]any{"type": "number"},
		"days":        map[string]any{"type": "integer"},
		"sunny":       map[string]any{"type": "boolean"},
		"observed":    map[string]any{"type": "string", "format": "date-time"},
		"forecast":    map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/day"}},
		"station": closed(map[string]any{
			"id":        map[string]any{"type": "string"},
			"elevation": map[string]any{"type": []string{"integer", "null"}},
		}),
		"note": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}},
	})
	s["$defs"] = map[string]any{"day": closed(map[string]any{
		"date": map[string]any{"type": "string", "format": "date"},
		"high": map[string]any{"type": "integer"},
	})}
	return s
}

// checkValid validates answer against schema, formats asserted, and
// reports the answer's top-level keys.
func checkValid(t *testing.T, schema map[string]any, answer string) {
	t.Helper()
	raw, _ := json.Marshal(schema)
	c := jsonschema.NewCompiler()
	c.Draft, c.AssertFormat = jsonschema.Draft2020, true
	if err := c.AddResource("schema.json", bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	var v any
	if err := json.Unmarshal([]byte(answer), &v); err != nil {
		t.Fatalf("answer %q is not JSON: %v", answer, err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("answer %s does not validate: %v", answer, err)
	}
}

func chatSchemaFormat(schema map[string]any, strict bool) openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "report", Schema: schema, Strict: openai.Bool(strict)},
	}}
}

func TestChatStructuredOutput(t *testing.T) {
	_, client := startOpenAI(t)
	loose := map[string]any{"type": "object", "properties": map[string]any{
		"score": map[string]any{"type": "integer", "minimum": 3, "exclusiveMaximum": 5},
		"ratio": map[string]any{"type": "number", "multipleOf": 0.25, "minimum": 2},
		"code":  map[string]any{"type": "string", "minLength": 12, "maxLength": 20},
		"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 3, "uniqueItems": true},
		"kind":  map[string]any{"const": "weather"},
	}, "required": []string{"score"}}
	for _, tt := range []struct {
		name   string
		schema map[string]any
		strict bool
	}{{"strict", reportSchema(), true}, {"not strict, with constraints", loose, false}} {
		t.Run(tt.name, func(t *testing.T) {
			p := chatParams(question)
			p.ResponseFormat = chatSchemaFormat(tt.schema, tt.strict)
			resp, err := client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			content := resp.Choices[0].Message.Content
			checkValid(t, tt.schema, content)
			acc, chunks := streamChat(t, client, p)
			if got := acc.Choices[0].Message.Content; got != content || acc.Choices[0].FinishReason != "stop" {
				t.Errorf("streamed %q (%s), want %q", got, acc.Choices[0].FinishReason, content)
			}
			deltas := 0
			for _, c := range chunks {
				if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
					deltas++
				}
			}
			if deltas < 3 || int(resp.Usage.CompletionTokens) != deltas {
				t.Errorf("%d content deltas for %d completion tokens: want the JSON split across deltas, one token each", deltas, resp.Usage.CompletionTokens)
			}
		})
	}
}

func TestChatJSONObject(t *testing.T) {
	_, client := startOpenAI(t)
	p := chatParams("Answer in JSON: " + question)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	resp, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(resp.Choices[0].Message.Content), &obj); err != nil || len(obj) == 0 {
		t.Errorf("content %q: want a JSON object (%v)", resp.Choices[0].Message.Content, err)
	}
	p.Messages = chatParams(question).Messages
	_, err = client.Chat.Completions.New(context.Background(), p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "messages" || !strings.Contains(apiErr.Message, "json") {
		t.Errorf("json_object without the word: %v, want a 400 on messages", err)
	}
}

func TestResponsesStructuredOutput(t *testing.T) {
	_, client := startOpenAI(t)
	format := responses.ResponseFormatTextConfigParamOfJSONSchema("report", reportSchema())
	format.OfJSONSchema.Strict = openai.Bool(true)
	params := responses.ResponseNewParams{Model: "gpt-4.1-mini", Text: responses.ResponseTextConfigParam{Format: format},
		MaxOutputTokens: openai.Int(2048), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(question)}}
	resp, err := client.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatalf("responses: %v", err)
	}
	checkValid(t, reportSchema(), resp.OutputText())
	if resp.Status != "completed" || resp.Text.Format.Type != "json_schema" || resp.Text.Format.Name != "report" {
		t.Errorf("status %q, text.format %s: want completed, the format echoed", resp.Status, resp.Text.Format.RawJSON())
	}
	if streamed := streamResponse(t, client, params); streamed.OutputText() != resp.OutputText() {
		t.Errorf("streamed %q, want %q", streamed.OutputText(), resp.OutputText())
	}
}

func TestMessagesStructuredOutput(t *testing.T) {
	_, client, _ := startAnthropic(t)
	p := messageParams(question)
	p.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: reportSchema()}}
	msg, err := client.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatalf("messages: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.StopReason != "end_turn" {
		t.Fatalf("message %s: want one text block, end_turn", msg.RawJSON())
	}
	checkValid(t, reportSchema(), msg.Content[0].Text)
	if streamed := streamMessage(t, client, p); streamed.Content[0].Text != msg.Content[0].Text {
		t.Errorf("streamed %q, want %q", streamed.Content[0].Text, msg.Content[0].Text)
	}
}

// TestStrictToolArguments: tool-call arguments follow the tool's schema.
func TestStrictToolArguments(t *testing.T) {
	_, client := startOpenAI(t)
	p := chatParams(question)
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "file_report", Parameters: reportSchema(), Strict: openai.Bool(true),
	})}
	resp, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil || len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("chat completion: %v %+v, want a tool call", err, resp)
	}
	checkValid(t, reportSchema(), resp.Choices[0].Message.ToolCalls[0].Function.Arguments)
}

// TestStructuredOutputRefusals: the schemas and formats the real APIs
// refuse before generating, refused with their messages.
func TestStructuredOutputRefusals(t *testing.T) {
	_, openAIBase := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI})
	_, anthropicBase := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic})
	const (
		open     = `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`
		partial  = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`
		nested   = `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}},"required":["a"],"additionalProperties":false}`
		closed   = `{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"required":["a"],"additionalProperties":false}`
		messages = `"messages":[{"role":"user","content":"hi"}]`
	)
	chat := func(format string) string { return `{"model":"m",` + messages + `,"response_format":` + format + `}` }
	tests := []struct {
		name, base, path, body string
		wantParam, wantMessage string
	}{
		{"strict without additionalProperties", openAIBase, "/chat/completions",
			chat(`{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":` + open + `}}`),
			"response_format", "Invalid schema for response_format 'r': In context=(), 'additionalProperties' is required to be supplied and to be false."},
		{"strict with a property not required", openAIBase, "/chat/completions",
			chat(`{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":` + partial + `}}`),
			"response_format", "Missing 'b'."},
		{"strict nested object", openAIBase, "/chat/completions",
			chat(`{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":` + nested + `}}`),
			"response_format", "In context=('properties', 'a'), 'additionalProperties'"},
		{"json_schema without a name", openAIBase, "/chat/completions",
			chat(`{"type":"json_schema","json_schema":{"schema":` + closed + `}}`), "response_format.json_schema.name", "name"},
		{"unknown format type", openAIBase, "/chat/completions", chat(`{"type":"yaml"}`), "response_format.type", "yaml"},
		{"responses strict without additionalProperties", openAIBase, "/responses",
			`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"r","strict":true,"schema":` + open + `}}}`,
			"text.format", "'additionalProperties' is required"},
		{"responses json_schema without a schema", openAIBase, "/responses",
			`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"r"}}}`, "text.format.schema", "schema"},
		{"responses json_object without the word", openAIBase, "/responses",
			`{"model":"m","input":"hi","text":{"format":{"type":"json_object"}}}`, "input", "json"},
		{"anthropic object left open", anthropicBase, "/messages",
			`{"model":"m","max_tokens":9,` + messages + `,"output_config":{"format":{"type":"json_schema","schema":` + open + `}}}`,
			"", "'additionalProperties' must be explicitly set to false"},
		{"anthropic numeric bound", anthropicBase, "/messages",
			`{"model":"m","max_tokens":9,` + messages + `,"output_config":{"format":{"type":"json_schema","schema":` + closed + `}}}`,
			"", "minimum"},
		{"anthropic format without a schema", anthropicBase, "/messages",
			`{"model":"m","max_tokens":9,` + messages + `,"output_config":{"format":{"type":"json_schema"}}}`, "", "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, e := postForError(t, tt.base+tt.path, tt.body)
			if status != 400 || e.Param != tt.wantParam || !strings.Contains(e.Message, tt.wantMessage) {
				t.Errorf("status %d, %+v; want 400 on %q saying %q", status, e, tt.wantParam, tt.wantMessage)
			}
		})
	}
}

// apiErrorBody is the part of either dialect's error body both share.
type apiErrorBody struct{ Message, Param string }

// postForError posts body with credentials either dialect takes and reads
// the error the answer carries.
func postForError(t *testing.T, url, body string) (int, apiErrorBody) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Error apiErrorBody }
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}
