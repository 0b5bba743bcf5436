package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// What both dialects' calls share: the texts, the schemas, the judges of
// arguments and answers against them.

// Call names; the judges read answers by them.
const (
	callBaseline    = "baseline"
	callStrict      = "strict_tools"
	callStructured  = "structured_output"
	callCacheFirst  = "prompt_caching (first)"
	callCacheRepeat = "prompt_caching (repeat)"
	callChoices     = "multi_choice"
	callAudio       = "audio_input"
	callThinking    = "extended_thinking"
)

// baselineText is the plain request; the audio and reasoning calls say the
// same, so what they add shows against it.
const baselineText = "Say hello in five words."

// baselineMaxTokens bounds the baseline's output, and the audio and
// reasoning calls' alike so that their counts compare.
const baselineMaxTokens = 64

// The strict tool's schema allows one city out of two and nothing else,
// and its prompt asks for a third and an extra field: arguments that
// validate were held to the schema, not merely written to the prompt.
const (
	toolName   = "record_city"
	toolPrompt = "Call record_city with the city Marseille, and add a field country set to France."
)

var toolSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"city": map[string]any{"type": "string", "enum": []string{"Paris", "Lyon"}}},
	"required":             []string{"city"},
	"additionalProperties": false,
}

// The structured answer's schema, and a prompt that mentions JSON, as
// OpenAI's JSON mode requires of one.
const answerPrompt = "Greet me and count the words of your greeting; answer in JSON."

var answerSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"greeting": map[string]any{"type": "string"},
		"words":    map[string]any{"type": "integer"},
	},
	"required":             []string{"greeting", "words"},
	"additionalProperties": false,
}

// longPrefix is a prompt prefix of about tokens tokens (at four bytes a
// token), the same on every run so that a repeat of it can be read from a
// cache.
func longPrefix(tokens int) string {
	var b strings.Builder
	for i := 1; b.Len() < tokens*4; i++ {
		fmt.Fprintf(&b, "Line %d of the pistra probe's repeated prefix: the same words on every run, so a cache can hold them.\n", i)
	}
	return b.String()
}

// body encodes a request body; map keys come out sorted, so the same call
// is the same bytes on every run.
func body(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("probe: encoding a request body: %v", err))
	}
	return b
}

// validates reports why doc (JSON text) does not validate against schema,
// or nil when it does.
func validates(schema map[string]any, doc string) error {
	s, err := jsonschema.CompileString("probe.json", string(body(schema)))
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	err = s.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	if ve.InstanceLocation == "" {
		return errors.New(ve.Message)
	}
	return fmt.Errorf("at %s: %s", ve.InstanceLocation, ve.Message)
}

// judgeArguments concludes on strict_tools from a call's arguments, or on
// its absence.
func judgeArguments(name, arguments string, found bool) Finding {
	switch {
	case !found:
		return Finding{Evidence: "no call to the strict tool, though tool_choice forced it: dropped"}
	case name != toolName:
		return Finding{Evidence: fmt.Sprintf("a call to %q instead of the forced %s: dropped", name, toolName)}
	}
	if err := validates(toolSchema, arguments); err != nil {
		return Finding{Evidence: fmt.Sprintf("arguments %s not held to the strict schema (%v): dropped", clip(arguments), err)}
	}
	return Finding{Honoured: true, Evidence: fmt.Sprintf("arguments %s held to the strict schema against a prompt asking otherwise", clip(arguments))}
}

// judgeAnswer concludes on structured_output from the answer's text.
func judgeAnswer(text string) Finding {
	if err := validates(answerSchema, text); err != nil {
		return Finding{Evidence: fmt.Sprintf("answer %s does not validate against its schema (%v): dropped", clip(text), err)}
	}
	return Finding{Honoured: true, Evidence: "the answer validated against its json_schema"}
}

// clip shortens an answer for evidence.
func clip(s string) string { return shorten(s, 60) }

// shorten puts s on one line of at most about n bytes.
func shorten(s string, n int) string {
	s = oneLine(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// decode reads a 2xx answer into v, saying what went wrong when it cannot.
func decode(a Answer, v any) (string, bool) {
	if !a.ok() {
		return a.refusal(), false
	}
	if err := json.Unmarshal(a.Body, v); err != nil {
		return "the answer is not the dialect's JSON: " + err.Error(), false
	}
	return "", true
}
