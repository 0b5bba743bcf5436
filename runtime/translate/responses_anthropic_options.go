package translate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Request options of the responses→anthropic pair that are not items.

// customSchema is the input of a custom (freeform) tool on Anthropic,
// which has none: one string, which the answer gives back as the call's
// input.
const customSchema = `{"type":"object","properties":{"input":{"type":"string","description":"The tool's whole input, as free text."}},"required":["input"],"additionalProperties":false}`

// respToolsToAnthropic converts function and custom tools and records the
// custom ones' names in custom. Hosted tools run on OpenAI's side and have
// no Anthropic counterpart, so they are refused.
func respToolsToAnthropic(tools []respTool, custom *[]string) ([]antTool, error) {
	out := make([]antTool, 0, len(tools))
	for i, t := range tools {
		var at antTool
		switch t.Type {
		case "function":
			schema := t.Parameters
			if len(schema) == 0 || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			at = antTool{Name: t.Name, Description: t.Description, InputSchema: schema}
			if t.Strict != nil && *t.Strict {
				// Responses' implicit strict has no Anthropic twin: only an
				// explicit one is sent, with the schema lowered to what
				// Anthropic's strict mode takes.
				lowered, _, err := LowerSchema(schema)
				if err != nil {
					return nil, fmt.Errorf("responses request: tools[%d] (%s): %w", i, t.Name, err)
				}
				at.InputSchema, at.Strict = lowered, t.Strict
			}
		case "custom":
			at = antTool{Name: t.Name, Description: customDescription(t), InputSchema: json.RawMessage(customSchema)}
			*custom = append(*custom, t.Name)
		default:
			return nil, fmt.Errorf("responses request: tools[%d]: %q tools are not translated", i, t.Type)
		}
		out = append(out, at)
	}
	return out, nil
}

// customDescription is a custom tool's description with its grammar, which
// Anthropic cannot enforce, stated for the model to follow.
func customDescription(t respTool) string {
	var f struct {
		Type       string `json:"type"`
		Syntax     string `json:"syntax"`
		Definition string `json:"definition"`
	}
	if json.Unmarshal(t.Format, &f) != nil || f.Type != "grammar" || f.Definition == "" {
		return t.Description
	}
	return t.Description + "\n\nThe input must match this " + f.Syntax + " grammar:\n" + f.Definition
}

// respToolChoiceToAnthropic maps Responses' tool_choice onto the chat
// pair's mapping: the modes are the same, and a named function or custom
// tool is Chat's named function.
func respToolChoiceToAnthropic(raw json.RawMessage, parallel *bool, hasTools bool) (*antToolChoice, error) {
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if len(raw) > 0 && raw[0] == '{' {
		if json.Unmarshal(raw, &named) != nil || (named.Type != "function" && named.Type != "custom") || named.Name == "" {
			return nil, fmt.Errorf("responses request: tool_choice %s is not translated", raw)
		}
		chat, _ := marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
		raw = chat // plain strings: cannot fail
	}
	return oaiToolChoiceToAnthropic(raw, parallel, hasTools)
}

// respReasoningToThinking maps reasoning onto thinking as the chat pair
// maps reasoning_effort, and a requested summary onto summarized thinking:
// unrequested, the thinking text is omitted and only its signature comes
// back, which is all a replay needs.
func respReasoningToThinking(req *antRequest, r *respReasoning) error {
	if r == nil || r.Effort == "" {
		return nil
	}
	var err error
	if req.Thinking, req.OutputConfig, err = effortToThinking(r.Effort); err != nil {
		return fmt.Errorf("responses request: reasoning: %w", err)
	}
	if thinks(req.Thinking) {
		req.Thinking.Display = "omitted"
		if r.Summary != "" {
			req.Thinking.Display = "summarized"
		}
		if forcesTool(req.ToolChoice) {
			return errors.New("responses request: reasoning cannot be combined with a tool_choice " +
				"that forces a tool call: with thinking on, an Anthropic upstream takes only auto or none")
		}
	}
	return nil
}

// respFormatToAnthropic maps text.format json_schema onto
// output_config.format, its schema lowered as a strict tool's is. JSON mode has no Anthropic counterpart (a schema
// of any object would be closed to every property), so it is refused.
func respFormatToAnthropic(cfg *antOutputConfig, t *respText) (*antOutputConfig, error) {
	if t == nil || t.Format == nil || t.Format.Type == "text" {
		return cfg, nil
	}
	if t.Format.Type != "json_schema" || len(t.Format.Schema) == 0 {
		return nil, fmt.Errorf("responses request: text.format %q is not translated; use json_schema", t.Format.Type)
	}
	schema, _, err := LowerSchema(t.Format.Schema) // Anthropic holds every output format to its strict subset
	if err != nil {
		return nil, fmt.Errorf("responses request: text.format: %w", err)
	}
	if cfg == nil {
		cfg = &antOutputConfig{}
	}
	cfg.Format = &antOutputFormat{Type: "json_schema", Schema: schema}
	return cfg, nil
}
