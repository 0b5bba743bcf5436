package translate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Request options of the openai→anthropic pair that are not messages or tools.

// parseStop reads stop, a string or an array of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("openai request: stop must be a string or an array of strings")
	}
	return many, nil
}

// capTemperature caps OpenAI's 0–2 range at Anthropic's maximum of 1, as
// Anthropic's own compatibility layer does.
func capTemperature(t *float64) *float64 {
	if t == nil || *t <= 1 {
		return t
	}
	one := 1.0
	return &one
}

// effortToThinking maps reasoning_effort onto adaptive thinking with the same
// effort (extended_thinking is preserved by this pair). minimal has no
// Anthropic level and rounds up to low; none turns thinking off.
func effortToThinking(effort string) (*antThinking, *antOutputConfig, error) {
	switch effort {
	case "":
		return nil, nil, nil
	case "none":
		return &antThinking{Type: "disabled"}, nil, nil
	case "minimal":
		effort = "low"
	case "low", "medium", "high", "xhigh", "max":
	default:
		return nil, nil, fmt.Errorf("openai request: reasoning_effort %q is not translated", effort)
	}
	return &antThinking{Type: "adaptive"}, &antOutputConfig{Effort: effort}, nil
}

// withOutputFormat maps response_format onto output_config.format
// (structured_output is preserved by this pair, unless the schema had to
// be lowered: RequestLosses). JSON mode, which has no schema, becomes the
// schema of any object.
func withOutputFormat(cfg *antOutputConfig, rf *oaiResponseFormat) (*antOutputConfig, error) {
	if rf == nil || rf.Type == "text" {
		return cfg, nil
	}
	var schema json.RawMessage
	switch {
	case rf.Type == "json_schema" && rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0:
		var err error
		if schema, _, err = LowerSchema(rf.JSONSchema.Schema); err != nil {
			return nil, fmt.Errorf("openai request: response_format.json_schema.schema: %w", err)
		}
	case rf.Type == "json_object":
		schema = json.RawMessage(`{"type":"object"}`)
	default:
		return nil, fmt.Errorf("openai request: response_format %q is not translated", rf.Type)
	}
	if cfg == nil {
		cfg = &antOutputConfig{}
	}
	cfg.Format = &antOutputFormat{Type: "json_schema", Schema: schema}
	return cfg, nil
}

// cacheTTL is the cache_control ttl for the request's breakpoints. OpenAI
// ttls are minimum lifetimes of 30m or more, so an explicit one becomes
// Anthropic's longest, 1h; OpenAI's unstated default keeps Anthropic's
// default (5m), whose writes cost less.
func cacheTTL(in *oaiRequest) string {
	if in.PromptCacheRetention == "24h" || (in.PromptCacheOptions != nil && in.PromptCacheOptions.TTL != "") {
		return "1h"
	}
	return ""
}

// bpTTL is a breakpoint's own ttl, mapped as cacheTTL maps the request's.
func bpTTL(bp *oaiBreakpoint) string {
	if bp.TTL != "" {
		return "1h"
	}
	return ""
}

// asksAutomaticCaching reports whether the client signalled prompt caching
// beyond explicit breakpoints. OpenAI caches prefixes on its own; Anthropic
// only when asked, so a client that names a cache key, retention or implicit
// mode gets Anthropic's automatic caching. Explicit mode uses breakpoints only.
func asksAutomaticCaching(in *oaiRequest) bool {
	if in.PromptCacheOptions != nil {
		return in.PromptCacheOptions.Mode != "explicit"
	}
	return in.PromptCacheKey != "" || in.PromptCacheRetention != ""
}
