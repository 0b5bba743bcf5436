package fakeprovider

import (
	"encoding/json"
	"errors"
	"fmt"
)

// wireTool covers the three tool shapes: Chat Completions nests the function
// ({"type":"function","function":{name, parameters}}), the Responses API
// flattens it ({"type":"function", name, parameters}), Anthropic names the
// schema input_schema.
type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Parameters  json.RawMessage `json:"parameters"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      bool            `json:"strict"`
	Function    *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
		Strict     bool            `json:"strict"`
	} `json:"function"`
}

// callable returns the name and argument schema of a tool the fake can call
// (client-defined functions and the Responses API's freeform custom tools,
// which have no schema; not server tools) and whether it asks for strict
// arguments.
func (t wireTool) callable() (name string, schema json.RawMessage, strict, ok bool) {
	switch {
	case t.Type == "function" && t.Function != nil:
		return t.Function.Name, t.Function.Parameters, t.Function.Strict, t.Function.Name != ""
	case t.Type == "function":
		return t.Name, t.Parameters, t.Strict, t.Name != ""
	case t.Type == "" || t.Type == "custom":
		// A custom tool without a schema is the Responses API's freeform
		// tool, whose input is plain text.
		return t.Name, t.InputSchema, t.Strict, t.Name != "" && (t.InputSchema != nil || t.Type == "custom")
	}
	return "", nil, false, false
}

// Tool choice modes, common to both dialects.
const (
	choiceAuto     = "auto"
	choiceNone     = "none"
	choiceRequired = "required" // OpenAI "required", Anthropic {"type":"any"}
	choiceNamed    = "named"
)

type toolChoice struct {
	mode string
	name string
}

// parseToolChoice reads tool_choice in either dialect's form.
func parseToolChoice(raw json.RawMessage) (toolChoice, error) {
	if !present(raw) {
		return toolChoice{mode: choiceAuto}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case choiceAuto, choiceNone, choiceRequired:
			return toolChoice{mode: s}, nil
		}
		return toolChoice{}, fmt.Errorf("invalid tool_choice %q", s)
	}
	var obj struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return toolChoice{}, errors.New("tool_choice must be a string or an object")
	}
	switch obj.Type {
	case "auto", "allowed_tools":
		return toolChoice{mode: choiceAuto}, nil
	case "none":
		return toolChoice{mode: choiceNone}, nil
	case "any":
		return toolChoice{mode: choiceRequired}, nil
	case "function", "tool", "custom":
		name := obj.Name
		if name == "" {
			name = obj.Function.Name
		}
		return toolChoice{mode: choiceNamed, name: name}, nil
	}
	return toolChoice{}, fmt.Errorf("tool_choice type %q is not supported by the fake provider", obj.Type)
}

// toolCall is the call the fake makes instead of answering in text.
type toolCall struct {
	name      string
	arguments string // a JSON object
	// strict: the tool asked for arguments held to its schema.
	strict bool
	// freeform: a custom tool's call, whose arguments are plain text.
	freeform bool
}

func (c *toolCall) tokens() int { return textTokens(c.name) + textTokens(c.arguments) }

// toolCall reads tools and tool_choice and decides on a call. After a tool
// result the model answers in text, unless tool_choice forces a call.
func (r *wireRequest) toolCall(afterToolResult bool) (*toolCall, toolChoice, error) {
	choice, err := parseToolChoice(r.ToolChoice)
	if err != nil {
		return nil, choice, err
	}
	call, err := chooseTool(r.Tools, choice)
	if afterToolResult && choice.mode == choiceAuto {
		call = nil
	}
	return call, choice, err
}

// chooseTool decides whether the request gets a tool call: it does when it
// offers a callable tool and tool_choice is not "none". The named tool wins,
// otherwise the first callable one.
func chooseTool(tools json.RawMessage, choice toolChoice) (*toolCall, error) {
	var list []wireTool
	if present(tools) {
		if err := json.Unmarshal(tools, &list); err != nil {
			return nil, errors.New("tools must be an array of tool definitions")
		}
	}
	if len(list) == 0 {
		if choice.mode == choiceNamed || choice.mode == choiceRequired {
			return nil, errors.New("tool_choice is only allowed when tools are specified")
		}
		return nil, nil
	}
	if choice.mode == choiceNone {
		return nil, nil
	}
	for _, t := range list {
		name, schema, strict, ok := t.callable()
		if !ok || (choice.mode == choiceNamed && name != choice.name) {
			continue
		}
		if schema == nil && t.Type == "custom" {
			return &toolCall{name: name, arguments: freeformInput(name), freeform: true}, nil
		}
		return &toolCall{name: name, arguments: toolArguments(schema), strict: strict}, nil
	}
	if choice.mode == choiceNamed {
		return nil, fmt.Errorf("tool_choice names %q, which is not among the tools", choice.name)
	}
	return nil, nil
}

// freeformInput is what the fake writes to a freeform tool: a patch when
// the tool is Codex's apply_patch, whose grammar wants one, else a line.
func freeformInput(name string) string {
	if name == "apply_patch" {
		return "*** Begin Patch\n*** Add File: fake.txt\n+Hello from the fake provider.\n*** End Patch\n"
	}
	return "input for " + name + " from the fake provider"
}

// toolArguments builds arguments that fit a tool's schema; arguments are
// an object even when the schema says nothing the fake can read.
func toolArguments(schema json.RawMessage) string {
	if n := parseSchema(schema); n.typeName() != "object" {
		return "{}"
	}
	return exampleJSON(schema)
}
