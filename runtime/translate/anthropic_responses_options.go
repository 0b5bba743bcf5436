package translate

import (
	"encoding/json"
	"fmt"
)

// Request options of the anthropic→responses pair that are not items.

// antToolsToResponses converts client tools into flat function tools with
// strict stated: left out, Responses would try strict mode on a schema the
// client never asked to be held to.
func antToolsToResponses(tools []antTool) ([]respTool, error) {
	out := make([]respTool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, fmt.Errorf("anthropic request: tools[%d]: server tool %q is not translated", i, t.Type)
		}
		strict := t.Strict != nil && *t.Strict
		out = append(out, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.InputSchema, Strict: &strict})
	}
	return out, nil
}

// antToolChoiceToResponses is the chat pair's mapping, with a named tool
// in Responses' flat shape.
func antToolChoiceToResponses(c *antToolChoice, hasTools bool) (json.RawMessage, *bool, error) {
	raw, parallel, err := antToolChoiceToOpenAI(c, hasTools)
	if err != nil || c == nil || c.Type != "tool" {
		return raw, parallel, err
	}
	raw, err = marshal(respTool{Type: "function", Name: c.Name})
	return raw, parallel, err
}
