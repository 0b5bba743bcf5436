package fakeprovider_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/fakeprovider"
)

const essay = "Write a 500-word essay about rivers"

// post posts body to the fake at base+path and returns the status and the
// body: whole, or for a stream the data of each event, keyed by its name
// in order.
func post(t *testing.T, base, path, body string) (int, []byte, []sseEvent) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("X-Api-Key", testKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, nil
	}
	var events []sseEvent
	sc := bufio.NewScanner(resp.Body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		} else if d, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, sseEvent{name, []byte(d)})
		}
	}
	return resp.StatusCode, nil, events
}

type sseEvent struct {
	name string
	data []byte
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// TestLongAnswerCutByTheLimit: a message asking for 500 words gets a long
// answer, which a small max_output_tokens (Responses) or max_tokens
// (Messages) cuts, as a real model's would be: the stream ends in
// response.incomplete, the message stops at max_tokens.
func TestLongAnswerCutByTheLimit(t *testing.T) {
	if n := len(strings.Fields(fakeprovider.ReplyText(essay))); n < 500 {
		t.Fatalf("the answer to %q has %d words", essay, n)
	}
	_, oai := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	_, events := mustStream(t, oai, "/responses", `{"model":"gpt-5","input":"`+essay+`","max_output_tokens":16,"stream":true}`)
	last := events[len(events)-1]
	var done struct {
		Response struct {
			Status     string `json:"status"`
			Incomplete struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
			Usage struct {
				Output int `json:"output_tokens"`
			} `json:"usage"`
		} `json:"response"`
	}
	decode(t, last.data, &done)
	if r := done.Response; last.name != "response.incomplete" || r.Status != "incomplete" || r.Incomplete.Reason != "max_output_tokens" || r.Usage.Output != 16 {
		t.Errorf("terminal event %s %s, want response.incomplete for max_output_tokens with 16 output tokens", last.name, last.data)
	}
	_, ant := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey})
	status, body, _ := post(t, ant, "/messages", `{"model":"claude","max_tokens":16,"messages":[{"role":"user","content":"`+essay+`"}]}`)
	var msg struct {
		StopReason string `json:"stop_reason"`
		Usage      struct {
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	decode(t, body, &msg)
	if status != 200 || msg.StopReason != "max_tokens" || msg.Usage.Output != 16 {
		t.Errorf("%d %s, want stop_reason max_tokens after 16 tokens", status, body)
	}
}

func mustStream(t *testing.T, base, path, body string) (map[string]int, []sseEvent) {
	t.Helper()
	status, whole, events := post(t, base, path, body)
	if status != 200 || len(events) == 0 {
		t.Fatalf("%s %s: %d %s", path, body, status, whole)
	}
	seen := map[string]int{}
	for _, e := range events {
		seen[e.name]++
	}
	return seen, events
}

type reasoningItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	EncryptedContent string `json:"encrypted_content"`
}

// TestResponsesReasoningReplay: reasoning with a summary asked for shows
// it, streamed as summary events, and with include its encrypted content,
// which a store:false client replays; content the fake did not issue, or a
// reasoning item without any under store:false, is refused as the API does.
func TestResponsesReasoningReplay(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	ask := `{"model":"gpt-5","input":"hi","store":false,"include":["reasoning.encrypted_content"],"reasoning":{"effort":"low","summary":"auto"}`
	status, body, _ := post(t, base, "/responses", ask+`}`)
	var resp struct {
		Output []reasoningItem `json:"output"`
		Store  bool            `json:"store"`
	}
	decode(t, body, &resp)
	if status != 200 || len(resp.Output) == 0 {
		t.Fatalf("%d %s", status, body)
	}
	rs := resp.Output[0]
	if rs.Type != "reasoning" || len(rs.Summary) != 1 || rs.Summary[0].Text == "" || rs.EncryptedContent == "" || resp.Store {
		t.Fatalf("output %s: want a reasoning item with a summary and encrypted content, store false", body)
	}
	seen, _ := mustStream(t, base, "/responses", ask+`,"stream":true}`)
	for _, name := range []string{"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done"} {
		if seen[name] == 0 {
			t.Errorf("stream lacks %s: %v", name, seen)
		}
	}
	replay := func(item string) (int, string) {
		status, body, _ := post(t, base, "/responses", `{"model":"gpt-5","store":false,"input":[{"role":"user","content":"hi"},`+
			item+`,{"role":"user","content":"and then?"}]}`)
		return status, string(body)
	}
	item, _ := json.Marshal(rs)
	if status, body := replay(string(item)); status != 200 {
		t.Errorf("replaying the issued item: %d %s", status, body)
	}
	if status, body := replay(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"Zm9yZ2Vk"}`); status != 400 || !strings.Contains(body, "could not be verified") {
		t.Errorf("forged encrypted content: %d %s, want a 400", status, body)
	}
	if status, body := replay(`{"type":"reasoning","id":"rs_1","summary":[]}`); status != 404 || !strings.Contains(body, "not persisted") {
		t.Errorf("reasoning by id under store false: %d %s, want a 404", status, body)
	}
}

// TestResponsesCustomTool: a freeform custom tool (Codex's apply_patch) is
// called with text input, streamed as custom_tool_call_input events, and
// its output is answered in text.
func TestResponsesCustomTool(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	ask := `{"model":"gpt-5","input":"fix it","tools":[{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}]`
	status, body, _ := post(t, base, "/responses", ask+`}`)
	var resp struct {
		Output []struct {
			Type, Name, Input string
			CallID            string `json:"call_id"`
		} `json:"output"`
	}
	decode(t, body, &resp)
	if status != 200 || len(resp.Output) != 1 || resp.Output[0].Type != "custom_tool_call" || resp.Output[0].Name != "apply_patch" ||
		!strings.HasPrefix(resp.Output[0].Input, "*** Begin Patch") || resp.Output[0].CallID == "" {
		t.Fatalf("%d %s: want one apply_patch custom_tool_call with a patch", status, body)
	}
	seen, events := mustStream(t, base, "/responses", ask+`,"stream":true}`)
	if seen["response.custom_tool_call_input.delta"] == 0 || seen["response.custom_tool_call_input.done"] != 1 {
		t.Errorf("stream events %v: want custom_tool_call_input deltas and done", seen)
	}
	var input strings.Builder
	for _, e := range events {
		if e.name == "response.custom_tool_call_input.delta" {
			var d struct{ Delta string }
			decode(t, e.data, &d)
			input.WriteString(d.Delta)
		}
	}
	if input.String() != resp.Output[0].Input {
		t.Errorf("input deltas %q, want %q", input.String(), resp.Output[0].Input)
	}
	status, body, _ = post(t, base, "/responses", `{"model":"gpt-5","tools":[{"type":"custom","name":"apply_patch"}],"input":[{"role":"user","content":"fix it"},`+
		`{"type":"custom_tool_call","call_id":"call_1","name":"apply_patch","input":"x"},{"type":"custom_tool_call_output","call_id":"call_1","output":"done"}]}`)
	if status != 200 || !strings.Contains(string(body), `"type":"message"`) || strings.Contains(string(body), `"custom_tool_call"`) {
		t.Errorf("after the tool's output: %d %s, want a text answer", status, body)
	}
}
