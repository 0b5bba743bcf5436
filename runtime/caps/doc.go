package caps

import (
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// Doc says, for policy authors, what one capability is, what in a request
// body counts as using it (the readers in this package), and where the
// facts about a channel keeping it come from. The comment on #Channel in
// schema/policy.cue and `pistrac caps` are both rendered from Docs by
// Reference, and tests hold both to it.
type Doc struct {
	Cap plan.Cap
	// Means is the behaviour a request depends on.
	Means string
	// Detected lists, per route, what the reader counts; a route whose
	// bodies cannot carry the capability has no entry.
	Detected []Detect
	// NotRead is why the capability is never read from a body, for one no
	// route detects.
	NotRead string
}

// Detect is what counts as using a capability on some routes.
type Detect struct {
	Routes []plan.Route
	What   string
}

// Docs documents every capability, in bit order.
var Docs = []Doc{
	{Cap: plan.CapStrictTools, Means: "the provider holds a function call's arguments to the tool's JSON schema exactly (strict mode)",
		Detected: []Detect{
			{[]plan.Route{plan.RouteChatCompletions}, "tools[].function.strict is true"},
			{[]plan.Route{plan.RouteResponses}, `a tools[] entry of type "function" with strict true`},
			{[]plan.Route{plan.RouteMessages}, "tools[].strict is true"},
		}},
	{Cap: plan.CapStructuredOutput, Means: "the answer is JSON, to a given schema or in JSON mode",
		Detected: []Detect{
			{[]plan.Route{plan.RouteChatCompletions}, "response_format.type is json_schema or json_object"},
			{[]plan.Route{plan.RouteResponses}, "text.format.type is json_schema or json_object"},
			{[]plan.Route{plan.RouteMessages}, "output_config.format (or the beta's output_format) has type json_schema or json_object"},
		}},
	{Cap: plan.CapPromptCaching, Means: "the provider caches the prompt prefix the request marks, and bills reads of it as cached",
		Detected: []Detect{
			{[]plan.Route{plan.RouteChatCompletions, plan.RouteResponses}, "prompt_cache_key or prompt_cache_retention is a non-empty string, prompt_cache_options is set, or a content part carries prompt_cache_breakpoint"},
			{[]plan.Route{plan.RouteMessages}, "cache_control is set at the top level, on a system block, on a tool, or on a content block (tool_result contents included)"},
		}},
	{Cap: plan.CapExtendedThinking, Means: "the model reasons before answering, as the request asks",
		Detected: []Detect{
			{[]plan.Route{plan.RouteChatCompletions}, `reasoning_effort is a string other than "none", or a thinking object turns thinking on`},
			{[]plan.Route{plan.RouteResponses}, `reasoning.effort is a string other than "none"`},
			{[]plan.Route{plan.RouteMessages}, "thinking.type is enabled, adaptive or between_tools"},
		}},
	{Cap: plan.CapUsageDetails, Means: "the answer's usage reports the cached-input and reasoning token splits a budget meters",
		NotRead: "no request asks for it; a profile pins it with require_caps"},
	{Cap: plan.CapAudioInput, Means: "the model hears audio parts of the input",
		Detected: []Detect{
			{[]plan.Route{plan.RouteChatCompletions}, "a messages[].content[] part of type input_audio"},
			{[]plan.Route{plan.RouteResponses}, "an input item's part of type input_audio"},
		}},
	{Cap: plan.CapMultiChoice, Means: "several completions are generated for one request",
		Detected: []Detect{
			{[]plan.Route{plan.RouteChatCompletions}, "n is a number greater than 1"},
			{[]plan.Route{plan.RouteCompletions}, "n or best_of is a number greater than 1"},
		}},
}

// Reference renders Docs as text wrapped at width, one paragraph per
// capability, followed by where the facts about channels come from. Lines
// carry no comment marker, so the schema and the CLI print the same text.
func Reference(width int) []string {
	var out []string
	for _, d := range Docs {
		out = append(out, wrap(d.Cap.String()+": "+d.Means+".", width, "  ")...)
		if d.NotRead != "" {
			out = append(out, wrap("never read from a body: "+d.NotRead+".", width, "    ", "  ")...)
		}
		for _, det := range d.Detected {
			out = append(out, wrap(strings.Join(plan.Names(det.Routes), ", ")+": "+det.What+".", width, "    ", "  ")...)
		}
		if lost := translationsDropping(d.Cap); lost != "" {
			out = append(out, wrap(lost+".", width, "    ", "  ")...)
		}
	}
	out = append(out, "")
	out = append(out, wrap("Where the facts come from: what a body uses is read by runtime/caps "+
		"(a byte prefilter, then a structural confirm at the paths above; embeddings bodies carry none); "+
		"what a channel keeps is its claim: a native channel keeps every capability, a provider_compat "+
		"channel keeps exactly its preserves list, dated by verified_at and verified_by (the page or probe "+
		"it was read from), and a translated path keeps what pistra's translators carry "+
		"(plan.TranslationLosses, held to by runtime/translate's tests).", width, "")...)
	return out
}

// translationsDropping says which translation pairs lose c, "" for none.
func translationsDropping(c plan.Cap) string {
	var pairs []string
	for _, t := range plan.Translations {
		if plan.TranslationLosses[t].Has(c) {
			pairs = append(pairs, string(t))
		}
	}
	switch len(pairs) {
	case 0:
		return ""
	case 1:
		return "translation " + pairs[0] + " drops it"
	}
	return "translations " + strings.Join(pairs, " and ") + " drop it"
}

// wrap breaks text into lines of at most width, words kept whole; lines
// after the first start with next, and the first with first when given.
func wrap(text string, width int, next string, first ...string) []string {
	var out []string
	line := strings.Join(first, "")
	prefix := len(line)
	for _, w := range strings.Fields(text) {
		if len(line) > prefix && len(line)+1+len(w) > width {
			out = append(out, line)
			line, prefix = next, len(next)
		}
		if len(line) > prefix {
			line += " "
		}
		line += w
	}
	return append(out, line)
}
