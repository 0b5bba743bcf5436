package translate

import (
	"encoding/json"
	"fmt"
)

// Request options of the anthropic→openai pair that are not messages.

// antToolsToOpenAI converts client tools into function tools. strict and
// cache_control are dropped; server tools (typed, e.g. web_search_20250305)
// run inside Anthropic's API and cannot be carried.
func antToolsToOpenAI(tools []antTool) ([]oaiTool, error) {
	out := make([]oaiTool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, fmt.Errorf("anthropic request: tools[%d]: server tool %q is not translated", i, t.Type)
		}
		out = append(out, oaiTool{Type: "function", Function: oaiFunction{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
		}})
	}
	return out, nil
}

// antToolChoiceToOpenAI maps auto/any/tool/none to auto/required/named/none,
// and disable_parallel_tool_use to parallel_tool_calls:false, which OpenAI
// accepts only alongside tools.
func antToolChoiceToOpenAI(c *antToolChoice, hasTools bool) (json.RawMessage, *bool, error) {
	if c == nil {
		return nil, nil, nil
	}
	type named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	var choice any
	switch c.Type {
	case "auto", "none":
		choice = c.Type
	case "any":
		choice = "required"
	case "tool":
		n := named{Type: "function"}
		n.Function.Name = c.Name
		choice = n
	default:
		return nil, nil, fmt.Errorf("anthropic request: tool_choice %q is not translated", c.Type)
	}
	raw, err := marshal(choice)
	if err != nil {
		return nil, nil, fmt.Errorf("anthropic request: tool_choice: %w", err)
	}
	var parallel *bool
	if c.DisableParallelToolUse != nil && *c.DisableParallelToolUse && hasTools {
		no := false
		parallel = &no
	}
	return raw, parallel, nil
}

// Thinking budgets at or above these read as the next effort up.
const (
	budgetMedium = 4096
	budgetHigh   = 16384
)

// thinkingToEffort maps thinking onto reasoning_effort, so the upstream
// reasons as asked, although its answer carries no thinking back
// (extended_thinking is lost by this pair). An
// explicit output_config.effort wins; a budget maps by size; adaptive and
// between_tools without an effort ask for medium, OpenAI's own default,
// rather than leave it unsaid. Disabled, or no thinking, sends nothing:
// reasoning_effort is refused by models that do not reason.
func thinkingToEffort(t *antThinking, cfg *antOutputConfig) string {
	if t != nil && t.Type == "disabled" {
		return ""
	}
	if cfg != nil && cfg.Effort != "" {
		return cfg.Effort
	}
	if t == nil {
		return ""
	}
	switch t.Type {
	case "adaptive", "between_tools":
		return "medium"
	case "enabled":
	default:
		return ""
	}
	switch {
	case t.BudgetTokens >= budgetHigh:
		return "high"
	case t.BudgetTokens >= budgetMedium:
		return "medium"
	}
	return "low"
}
