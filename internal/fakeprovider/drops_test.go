package fakeprovider_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/plan"
)

func TestParseDrops(t *testing.T) {
	d, err := fakeprovider.ParseDrops(" multi_choice, strict_tools ,")
	if err != nil || d.String() != "strict_tools,multi_choice" || !d.Has(plan.CapMultiChoice) || d.Has(plan.CapAudioInput) {
		t.Errorf("ParseDrops: %v %q", err, d)
	}
	if d, err := fakeprovider.ParseDrops(""); err != nil || d != 0 {
		t.Errorf("empty: %v %v", d, err)
	}
	if _, err := fakeprovider.ParseDrops("strict_tools,telepathy"); err == nil || !strings.Contains(err.Error(), `"telepathy"`) {
		t.Errorf("unknown capability: %v", err)
	}
}

// TestDropsControl: the control endpoint reads and replaces the drops, and
// refuses a name that is not a capability.
func TestDropsControl(t *testing.T) {
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Drops: fakeprovider.Drops(plan.Of(plan.CapAudioInput))})
	control := strings.TrimSuffix(base, "/v1") + "/_fake/drops"
	got := func(resp *http.Response, err error) (int, string) {
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if status, b := got(http.Get(control)); status != 200 || b != `{"drops":"audio_input"}` {
		t.Errorf("GET: %d %s", status, b)
	}
	if status, b := got(http.Post(control, "application/json", strings.NewReader(`{"drops":"multi_choice,usage_details"}`))); status != 200 || b != `{"drops":"usage_details,multi_choice"}` {
		t.Errorf("POST: %d %s", status, b)
	}
	if status, _ := got(http.Post(control, "application/json", strings.NewReader(`{"drops":"nope"}`))); status != 400 {
		t.Errorf("POST of an unknown capability: %d, want 400", status)
	}
	if s.Drops() != fakeprovider.Drops(plan.Of(plan.CapUsageDetails, plan.CapMultiChoice)) {
		t.Errorf("drops %v after a refused POST", s.Drops())
	}
}

// call posts body to path of a fake of dialect dropping drops and returns
// the status and the decoded answer.
func call(t *testing.T, dialect fakeprovider.Dialect, drops plan.CapSet, path, body string) (int, map[string]any) {
	t.Helper()
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: dialect, Key: testKey, Drops: fakeprovider.Drops(drops)})
	resp, b, err := breakCall{dialect: dialect, path: path, body: body}.send(t, base)
	var out map[string]any
	if err == nil {
		err = json.Unmarshal([]byte(b), &out)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, out
}

// num is a decoded number, or -1 for anything else.
func num(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return -1
}

// at follows a path of keys and indexes into a decoded answer.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

const (
	strictTool = `"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}}}],"tool_choice":"required"`
	chatFormat = `"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}}}`
	audioPart  = `[{"type":"text","text":"hi"},{"type":"input_audio","input_audio":{"data":"` + "UklGRiQAAABXQVZFZm10IBAAAAABAAEAgD4AAAB9AAACABAAZGF0YQAAAAA=" + `","format":"wav"}}]`
)

// TestDropsChat: each capability dropped changes what a Chat Completions
// answer shows, as a compatibility endpoint's would, and kept it shows as
// OpenAI's does.
func TestDropsChat(t *testing.T) {
	long := strings.Repeat("All work and no play makes a dull gateway. ", 120)
	chat := func(extra, content string) string {
		return `{"model":"m","messages":[{"role":"user","content":` + content + `}]` + extra + `}`
	}
	for _, tt := range []struct {
		cap  plan.Cap
		body string
		// shows reads what the capability shows in an answer.
		shows func(status int, a map[string]any) bool
	}{
		{plan.CapStrictTools, chat(","+strictTool, `"hi"`), func(_ int, a map[string]any) bool {
			return at(a, "choices", 0, "message", "tool_calls", 0, "function", "arguments") == `{"a":"example"}`
		}},
		{plan.CapStructuredOutput, chat(","+chatFormat, `"hi"`), func(_ int, a map[string]any) bool {
			content, _ := at(a, "choices", 0, "message", "content").(string)
			return json.Valid([]byte(content))
		}},
		{plan.CapPromptCaching, chat("", `"`+long+`"`), func(_ int, a map[string]any) bool {
			return num(at(a, "usage", "prompt_tokens_details", "cached_tokens")) > 0
		}},
		{plan.CapExtendedThinking, chat(`,"reasoning_effort":"low"`, `"hi"`), func(_ int, a map[string]any) bool {
			return num(at(a, "usage", "completion_tokens_details", "reasoning_tokens")) > 0
		}},
		{plan.CapUsageDetails, chat("", `"hi"`), func(_ int, a map[string]any) bool {
			return at(a, "usage", "prompt_tokens_details") != nil && at(a, "usage", "completion_tokens_details") != nil
		}},
		{plan.CapAudioInput, chat("", audioPart), func(status int, a map[string]any) bool {
			return status == 200 && num(at(a, "usage", "prompt_tokens_details", "audio_tokens")) > 0
		}},
		{plan.CapMultiChoice, chat(`,"n":2`, `"hi"`), func(status int, a map[string]any) bool {
			choices, _ := at(a, "choices").([]any)
			return status == 200 && len(choices) == 2
		}},
	} {
		t.Run(tt.cap.String(), func(t *testing.T) {
			if status, a := call(t, fakeprovider.DialectOpenAI, 0, "/v1/chat/completions", tt.body); !tt.shows(status, a) {
				t.Errorf("kept: %d %v", status, a)
			}
			status, a := call(t, fakeprovider.DialectOpenAI, plan.Of(tt.cap), "/v1/chat/completions", tt.body)
			if tt.shows(status, a) {
				t.Errorf("dropped: %d %v", status, a)
			}
			if status != 200 && (status != 400 || at(a, "error", "type") != "invalid_request_error") {
				t.Errorf("dropped: %d %v, want a 200 or OpenAI's 400", status, a)
			}
		})
	}
}

// TestDropsMessages: the same on Messages, for what it can ask for.
func TestDropsMessages(t *testing.T) {
	msg := func(extra string) string {
		return `{"model":"claude-haiku-4-5","max_tokens":2048,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	block := func(a map[string]any, kind string) map[string]any {
		blocks, _ := at(a, "content").([]any)
		for _, b := range blocks {
			if m, _ := b.(map[string]any); m["type"] == kind {
				return m
			}
		}
		return nil
	}
	for _, tt := range []struct {
		cap   plan.Cap
		body  string
		shows func(a map[string]any) bool
	}{
		{plan.CapStrictTools, msg(`,"tools":[{"name":"f","strict":true,"input_schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}],"tool_choice":{"type":"any"}`),
			func(a map[string]any) bool {
				input, _ := json.Marshal(at(block(a, "tool_use"), "input"))
				return string(input) == `{"a":"example"}`
			}},
		{plan.CapStructuredOutput, msg(`,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}`),
			func(a map[string]any) bool {
				text, _ := at(block(a, "text"), "text").(string)
				return json.Valid([]byte(text))
			}},
		{plan.CapPromptCaching, msg(`,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]`),
			func(a map[string]any) bool { return num(at(a, "usage", "cache_read_input_tokens")) > 0 }},
		{plan.CapExtendedThinking, msg(`,"thinking":{"type":"enabled","budget_tokens":1024}`),
			func(a map[string]any) bool { return block(a, "thinking") != nil }},
		{plan.CapUsageDetails, msg(""), func(a map[string]any) bool {
			return num(at(a, "usage", "cache_creation_input_tokens")) == 0 && num(at(a, "usage", "cache_read_input_tokens")) == 0
		}},
	} {
		t.Run(tt.cap.String(), func(t *testing.T) {
			if status, a := call(t, fakeprovider.DialectAnthropic, 0, "/v1/messages", tt.body); status != 200 || !tt.shows(a) {
				t.Errorf("kept: %d %v", status, a)
			}
			if status, a := call(t, fakeprovider.DialectAnthropic, plan.Of(tt.cap), "/v1/messages", tt.body); status != 200 || tt.shows(a) {
				t.Errorf("dropped: %d %v", status, a)
			}
		})
	}
}

// TestDropStrictLeavesOtherToolsAlone: without strict, a call's arguments
// were never promised to hold, and the fake still writes them to the
// schema.
func TestDropStrictLeavesOtherToolsAlone(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],` + strings.Replace(strictTool, `"strict":true`, `"strict":false`, 1) + `}`
	_, a := call(t, fakeprovider.DialectOpenAI, plan.Of(plan.CapStrictTools), "/v1/chat/completions", body)
	if got := at(a, "choices", 0, "message", "tool_calls", 0, "function", "arguments"); got != `{"a":"example"}` {
		t.Errorf("arguments %v", got)
	}
}
