package fakeprovider_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

func messageParams(content string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-haiku-4-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(content))},
	}
}

func weatherToolParam() anthropic.ToolUnionParam {
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}},
		},
	}}
}

func TestMessages(t *testing.T) {
	_, client, _ := startAnthropic(t)
	reply := fakeprovider.ReplyText(question)
	tests := []struct {
		name       string
		edit       func(*anthropic.MessageNewParams)
		wantBlocks []string
		wantText   string
		wantStop   anthropic.StopReason
		wantCache  bool
	}{
		{"text", func(*anthropic.MessageNewParams) {}, []string{"text"}, reply, "end_turn", false},
		{"thinking", func(p *anthropic.MessageNewParams) {
			p.MaxTokens = 2048
			p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
		}, []string{"thinking", "text"}, reply, "end_turn", false},
		{"tool use introduced", func(p *anthropic.MessageNewParams) {
			p.Tools = []anthropic.ToolUnionParam{weatherToolParam()}
		}, []string{"text", "tool_use"}, "I'll use the get_weather tool.", "tool_use", false},
		{"tool use forced", func(p *anthropic.MessageNewParams) {
			p.Tools = []anthropic.ToolUnionParam{weatherToolParam()}
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: "get_weather"}}
		}, []string{"tool_use"}, "", "tool_use", false},
		{"prompt caching", func(p *anthropic.MessageNewParams) {
			p.System = []anthropic.TextBlockParam{{Text: "You are terse.", CacheControl: anthropic.NewCacheControlEphemeralParam()}}
		}, []string{"text"}, reply, "end_turn", true},
		{"max tokens", func(p *anthropic.MessageNewParams) { p.MaxTokens = 3 },
			[]string{"text"}, strings.Join(strings.Fields(reply)[:3], " "), "max_tokens", false},
		{"stop sequence", func(p *anthropic.MessageNewParams) { p.StopSequences = []string{"Paris"} },
			[]string{"text"}, reply[:strings.Index(reply, "Paris")], "stop_sequence", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := messageParams(question)
			tt.edit(&p)
			msg, err := client.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatalf("messages: %v", err)
			}
			checkMessage(t, msg, tt.wantBlocks, tt.wantText, tt.wantStop, tt.wantCache)
			streamed := streamMessage(t, client, p)
			checkMessage(t, streamed, tt.wantBlocks, tt.wantText, tt.wantStop, tt.wantCache)
			if streamed.Usage.InputTokens != msg.Usage.InputTokens || streamed.Usage.OutputTokens != msg.Usage.OutputTokens {
				t.Errorf("stream usage %s differs from %s", streamed.Usage.RawJSON(), msg.Usage.RawJSON())
			}
		})
	}
}

func checkMessage(t *testing.T, msg *anthropic.Message, blocks []string, text string, stop anthropic.StopReason, cache bool) {
	t.Helper()
	var types []string
	var gotText string
	for _, b := range msg.Content {
		types = append(types, b.Type)
		switch b.Type {
		case "text":
			gotText = b.Text
		case "thinking":
			if b.Thinking == "" || b.Signature == "" {
				t.Errorf("thinking block %s lacks text or signature", b.RawJSON())
			}
		case "tool_use":
			var input map[string]any
			if err := json.Unmarshal(b.Input, &input); err != nil || input["city"] == nil || !strings.HasPrefix(b.ID, "toolu_") {
				t.Errorf("tool_use %s: want a toolu_ id and a city (%v)", b.RawJSON(), err)
			}
		}
	}
	if !slices.Equal(types, blocks) || gotText != text || msg.StopReason != stop {
		t.Errorf("blocks %v text %q stop %q; want %v %q %q", types, gotText, msg.StopReason, blocks, text, stop)
	}
	if stop == "stop_sequence" && msg.StopSequence != "Paris" {
		t.Errorf("stop sequence %q, want Paris", msg.StopSequence)
	}
	u := msg.Usage
	if u.InputTokens < 1 || u.OutputTokens < 1 {
		t.Errorf("usage %s: want input and output tokens", u.RawJSON())
	}
	if gotCache := u.CacheReadInputTokens > 0 && u.CacheCreationInputTokens > 0; gotCache != cache {
		t.Errorf("usage %s: want cache reads and writes=%v", u.RawJSON(), cache)
	}
	if slices.Contains(blocks, "thinking") != (u.OutputTokensDetails.ThinkingTokens > 0) || u.OutputTokensDetails.ThinkingTokens >= u.OutputTokens {
		t.Errorf("usage %s: thinking tokens must be part of the output, and only with thinking", u.RawJSON())
	}
}

// streamMessage streams a message and accumulates it as the SDK does.
func streamMessage(t *testing.T, client anthropic.Client, p anthropic.MessageNewParams) *anthropic.Message {
	t.Helper()
	stream := client.Messages.NewStreaming(context.Background(), p)
	var msg anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.RawJSON(), err)
		}
		if ev.Type == "message_start" && ev.Message.Usage.OutputTokens != 1 {
			t.Errorf("message_start output tokens %d, want the placeholder 1", ev.Message.Usage.OutputTokens)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if types[0] != "message_start" || types[len(types)-2] != "message_delta" || types[len(types)-1] != "message_stop" {
		t.Errorf("event order %v", types)
	}
	return &msg
}

func TestMessagesStreamHasEventLines(t *testing.T) {
	_, _, base := startAnthropic(t)
	body := `{"model":"claude-haiku-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}],
		"tools":[{"name":"t","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}}]}`
	req, _ := http.NewRequest("POST", base+"/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", testKey) // the older SDKs' header
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("request-id") == "" {
		t.Fatalf("status %d, request-id %q", resp.StatusCode, resp.Header.Get("request-id"))
	}
	sc := bufio.NewScanner(resp.Body)
	event, events := "", 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data struct{ Type string }
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil || event == "" || data.Type != event {
				t.Errorf("data line %q follows event %q: want an event line naming its type", line, event)
			}
			event = ""
			events++
		case line != "":
			t.Errorf("unexpected line %q", line)
		}
	}
	if events < 8 {
		t.Errorf("only %d events", events)
	}
}

func TestAnthropicErrors(t *testing.T) {
	_, client, base := startAnthropic(t)
	wrong := sdkclient.Anthropic(base, "sk-wrong")
	_, err := wrong.Messages.New(context.Background(), messageParams(question))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Type() != "authentication_error" || apiErr.RequestID == "" {
		t.Fatalf("wrong key: %v, want a 401 authentication_error with a request id", err)
	}
	p := messageParams(question)
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(512)
	_, err = client.Messages.New(context.Background(), p)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type() != "invalid_request_error" {
		t.Fatalf("thinking budget under 1024: %v, want a 400 invalid_request_error", err)
	}
}

func TestAnthropicRequestErrors(t *testing.T) {
	_, _, base := startAnthropic(t)
	tests := []struct {
		name, version, body string
		wantStatus          int
		wantMessage         string
	}{
		{"no version", "", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, 400, "anthropic-version"},
		{"no max_tokens", "2023-06-01", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens"},
		{"temperature under 2026-10-21", "2026-10-21",
			`{"model":"m","max_tokens":5,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`, 400, "temperature"},
		{"temperature under 2023-06-01", "2023-06-01",
			`{"model":"m","max_tokens":5,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`, 200, ""},
		{"malformed JSON", "2023-06-01", `{"model":`, 400, "invalid request body"},
		{"unknown path", "2023-06-01", `{}`, 404, "Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/messages"
			if tt.wantStatus == 404 {
				path = "/nothing"
			}
			req, _ := http.NewRequest("POST", base+path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+testKey)
			if tt.version != "" {
				req.Header.Set("anthropic-version", tt.version)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Type      string
				Error     struct{ Type, Message string }
				RequestID string `json:"request_id"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (%+v)", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus != 200 && (body.Type != "error" || !strings.Contains(body.Error.Message, tt.wantMessage) ||
				body.RequestID != resp.Header.Get("request-id")) {
				t.Errorf("body %+v: want an error mentioning %q with the request-id header's id", body, tt.wantMessage)
			}
		})
	}
}

func TestAnthropicModels(t *testing.T) {
	_, client, _ := startAnthropic(t)
	var ids []string
	pager := client.Models.ListAutoPaging(context.Background(), anthropic.ModelListParams{Limit: anthropic.Int(1)})
	for pager.Next() {
		m := pager.Current()
		if m.Type != "model" || m.DisplayName == "" || m.CreatedAt.IsZero() {
			t.Errorf("model %s", m.RawJSON())
		}
		ids = append(ids, m.ID)
	}
	if err := pager.Err(); err != nil {
		t.Fatalf("models: %v", err)
	}
	if len(ids) != 3 || !slices.Contains(ids, "claude-haiku-4-5") {
		t.Errorf("paged through %v, want the three default models", ids)
	}
	_, err := client.Models.Get(context.Background(), "claude-nope", anthropic.ModelGetParams{})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Type() != "not_found_error" {
		t.Errorf("unknown model: %v, want a 404 not_found_error", err)
	}
}

func TestCountTokens(t *testing.T) {
	_, client, _ := startAnthropic(t)
	count := func(text string) int64 {
		res, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
			Model:    "claude-haiku-4-5",
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
		}, aoption.WithMaxRetries(0))
		if err != nil {
			t.Fatalf("count tokens: %v", err)
		}
		return res.InputTokens
	}
	short, long := count(question), count(strings.Repeat(question, 50))
	if short < 1 || long <= short {
		t.Errorf("counted %d and %d tokens: want more for the longer prompt", short, long)
	}
}
