package fakeprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// breakCall is one API call sent raw, so a test sees the bytes a break
// leaves: the body as far as it came, and how reading it ended.
type breakCall struct {
	name    string
	dialect fakeprovider.Dialect
	path    string
	body    string
}

func (c breakCall) send(t *testing.T, base string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/v1")+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

const (
	chatBody      = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + question + `"}]}`
	chatStreamed  = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` + question + `"}]}`
	responsesBody = `{"model":"gpt-4.1-mini","stream":true,"input":"` + question + `"}`
	messagesBody  = `{"model":"claude-haiku-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"` + question + `"}]}`
)

// streamCalls are a stream of each shape: chat and legacy completions,
// Anthropic's OpenAI-compatible chat, Responses and Anthropic messages.
var streamCalls = []breakCall{
	{"chat", fakeprovider.DialectOpenAI, "/v1/chat/completions", chatStreamed},
	{"chat with usage", fakeprovider.DialectOpenAI, "/v1/chat/completions",
		`{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi there"}]}`},
	{"completions", fakeprovider.DialectOpenAI, "/v1/completions", `{"model":"gpt-3.5-turbo-instruct","stream":true,"prompt":"hi there"}`},
	{"anthropic compat chat", fakeprovider.DialectAnthropic, "/v1/chat/completions", chatStreamed},
	{"responses", fakeprovider.DialectOpenAI, "/v1/responses", responsesBody},
	{"messages", fakeprovider.DialectAnthropic, "/v1/messages", messagesBody},
}

// terminal is the event a shape's stream ends with.
func (c breakCall) terminal() string {
	switch c.path {
	case "/v1/responses":
		return "event: response.completed\n"
	case "/v1/messages":
		return "event: message_stop\n"
	}
	return "data: [DONE]\n"
}

// errorEvent is the error event the shape's break sends, whole; seq is the
// Responses sequence number it carries.
func (c breakCall) errorEvent(seq int, requestID string) string {
	switch {
	case c.path == "/v1/responses":
		return `event: error` + "\n" + `data: {"type":"error","code":"server_error","message":"` + fakeprovider.InjectedStreamError +
			`","param":null,"sequence_number":` + strconv.Itoa(seq) + "}\n\n"
	case c.path == "/v1/messages":
		return `event: error` + "\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"` + requestID + `"}` + "\n\n"
	}
	return `data: {"error":{"message":"` + fakeprovider.InjectedStreamError + `","type":"server_error","param":null,"code":null}}` + "\n\n"
}

// content is what marks an event carrying a content delta.
func (c breakCall) content() string {
	switch c.path {
	case "/v1/responses":
		return "event: response.output_text.delta\n"
	case "/v1/messages":
		return "event: content_block_delta\n"
	case "/v1/completions":
		return `"text":"Hello"`
	}
	return `"delta":{"content":"Hello"}`
}

func requestID(resp *http.Response) string {
	return resp.Header.Get("Request-Id") + resp.Header.Get("X-Request-Id")
}

func setFaults(t *testing.T, s *fakeprovider.Server, f fakeprovider.Faults) {
	t.Helper()
	if err := s.SetFaults(f); err != nil {
		t.Fatal(err)
	}
}

// TestBreakHalfBody: a whole answer arrives with its full Content-Length
// and half its bytes, then the connection closes; only the first
// BreakCount answers break, and streams do not count.
func TestBreakHalfBody(t *testing.T) {
	for _, c := range []breakCall{
		{"chat", fakeprovider.DialectOpenAI, "/v1/chat/completions", chatBody},
		{"responses", fakeprovider.DialectOpenAI, "/v1/responses", `{"model":"gpt-4.1-mini","input":"hi"}`},
		{"messages", fakeprovider.DialectAnthropic, "/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: c.dialect, Key: testKey})
			setFaults(t, s, fakeprovider.Faults{Break: fakeprovider.BreakHalfBody, BreakCount: 1})
			streamed := streamCalls[0]
			if c.dialect == fakeprovider.DialectAnthropic {
				streamed = streamCalls[len(streamCalls)-1]
			}
			if resp, body, err := streamed.send(t, base); err != nil || resp.StatusCode != 200 || !strings.Contains(body, streamed.terminal()) {
				t.Fatalf("a stream under half-body: status %d, %v: want it whole", resp.StatusCode, err)
			}
			resp, body, err := c.send(t, base)
			if !errors.Is(err, io.ErrUnexpectedEOF) || resp.StatusCode != 200 {
				t.Fatalf("status %d, read error %v: want 200 and an unexpected EOF", resp.StatusCode, err)
			}
			if resp.ContentLength <= 0 || int64(len(body)) != resp.ContentLength/2 {
				t.Errorf("read %d bytes of a Content-Length of %d: want half", len(body), resp.ContentLength)
			}
			resp, body, err = c.send(t, base)
			if err != nil || int64(len(body)) != resp.ContentLength || !json.Valid([]byte(body)) {
				t.Errorf("the call after the break: %v, %d of %d bytes", err, len(body), resp.ContentLength)
			}
		})
	}
}

// TestBreakHalfBodySDK: the OpenAI SDK sees a failed call, never an empty
// answer.
func TestBreakHalfBodySDK(t *testing.T) {
	s, client := startOpenAI(t)
	setFaults(t, s, fakeprovider.Faults{Break: fakeprovider.BreakHalfBody})
	if got, err := client.Chat.Completions.New(context.Background(), chatParams(question)); err == nil {
		t.Fatalf("a half body read as %+v", got)
	}
	if s.Calls() != 1 {
		t.Errorf("calls %d", s.Calls())
	}
}

// TestBreakNoTerminal: each shape's stream ends cleanly, everything sent
// but its terminal event.
func TestBreakNoTerminal(t *testing.T) {
	for _, c := range streamCalls {
		t.Run(c.name, func(t *testing.T) {
			s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: c.dialect, Key: testKey})
			_, whole, err := c.send(t, base)
			if i := strings.LastIndex(whole, c.terminal()); err != nil || i < 0 || strings.Count(whole[i:], "\n\n") != 1 {
				t.Fatalf("unbroken stream (%v) does not end with its terminal event:\n%s", err, whole)
			}
			setFaults(t, s, fakeprovider.Faults{Break: fakeprovider.BreakNoTerminal, BreakCount: 1})
			resp, body, err := c.send(t, base)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("status %d, %v: want a clean end", resp.StatusCode, err)
			}
			if strings.Contains(body, c.terminal()) || !strings.HasSuffix(body, "\n\n") {
				t.Errorf("stream carries its terminal event or ends mid-event:\n%s", body)
			}
			if cut, _, _ := strings.Cut(whole, c.terminal()); strings.Count(body, "data: ") != strings.Count(cut, "data: ") {
				t.Errorf("stream sent %d events, want all %d before the terminal one:\n%s", strings.Count(body, "data: "), strings.Count(cut, "data: "), body)
			}
			if _, again, _ := c.send(t, base); !strings.Contains(again, c.terminal()) {
				t.Errorf("the stream after the break has no terminal event")
			}
		})
	}
}

// TestBreakOpeningError: the stream's one event is the dialect's error.
func TestBreakOpeningError(t *testing.T) {
	for _, c := range streamCalls {
		t.Run(c.name, func(t *testing.T) {
			_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: c.dialect, Key: testKey,
				Faults: fakeprovider.Faults{Break: fakeprovider.BreakOpeningError, BreakCount: 2}})
			for i := range 2 {
				resp, body, err := c.send(t, base)
				if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
					t.Fatalf("call %d: status %d %q, %v", i, resp.StatusCode, resp.Header.Get("Content-Type"), err)
				}
				if want := c.errorEvent(0, requestID(resp)); body != want {
					t.Errorf("call %d sent\n%s\nwant\n%s", i, body, want)
				}
			}
			if _, body, _ := c.send(t, base); !strings.Contains(body, c.terminal()) {
				t.Errorf("the third stream is broken too:\n%s", body)
			}
		})
	}
}

// TestBreakMidError: the error event follows the first content delta and
// ends the stream.
func TestBreakMidError(t *testing.T) {
	for _, c := range streamCalls {
		t.Run(c.name, func(t *testing.T) {
			s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: c.dialect, Key: testKey})
			_, whole, _ := c.send(t, base)
			setFaults(t, s, fakeprovider.Faults{Break: fakeprovider.BreakMidError})
			resp, body, err := c.send(t, base)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			// Up to and including the first content event, the stream is the
			// unbroken one (ids and times apart); then comes the error.
			i := strings.Index(body, c.content())
			if i < 0 {
				t.Fatalf("no content before the error:\n%s", body)
			}
			head := body[:i+strings.Index(body[i:], "\n\n")+2]
			events := strings.Count(head, "data: ")
			if want := c.errorEvent(events, requestID(resp)); body != head+want {
				t.Errorf("after the first content event\n%s\nwant\n%s", body[len(head):], want)
			}
			if wi := strings.Index(whole, c.content()); wi < 0 || strings.Count(whole[:wi], "\n\n") != events-1 {
				t.Errorf("the error does not follow the first content event (%d events before it)", events)
			}
		})
	}
}

// TestBreaksThroughSDKs: what the official SDKs make of the error events.
func TestBreaksThroughSDKs(t *testing.T) {
	t.Run("chat", func(t *testing.T) {
		s, client := startOpenAI(t)
		setFaults(t, s, fakeprovider.Faults{Break: fakeprovider.BreakMidError})
		stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams(question))
		var text string
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 {
				text += c.Choices[0].Delta.Content
			}
		}
		var se *ssestream.StreamError
		if !errors.As(stream.Err(), &se) || !strings.Contains(se.Message, fakeprovider.InjectedStreamError) || text != "Hello" {
			t.Errorf("got %q then %v: want the first word, then the stream's error", text, stream.Err())
		}
	})
	t.Run("messages", func(t *testing.T) {
		s, client, _ := startAnthropic(t)
		setFaults(t, s, fakeprovider.Faults{Break: fakeprovider.BreakOpeningError})
		stream := client.Messages.NewStreaming(context.Background(), messageParams(question))
		events := 0
		for stream.Next() {
			events++
		}
		var apiErr *anthropic.Error
		if err := stream.Err(); events != 0 || err == nil || !strings.Contains(err.Error(), "overloaded_error") {
			t.Errorf("%d events, then %v: want an overloaded_error at once", events, err)
		} else if errors.As(err, &apiErr) && apiErr.Type() != "overloaded_error" {
			t.Errorf("error type %q", apiErr.Type())
		}
	})
	t.Run("responses", func(t *testing.T) {
		s, client := startOpenAI(t)
		setFaults(t, s, fakeprovider.Faults{Break: fakeprovider.BreakOpeningError})
		params := responses.ResponseNewParams{Model: "gpt-4.1-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(question)}}
		stream := client.Responses.NewStreaming(context.Background(), params)
		var types []string
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if ev.Type == "error" && ev.Message != fakeprovider.InjectedStreamError {
				t.Errorf("error event message %q", ev.Message)
			}
		}
		// The SDK takes an error event as an event: it has no top-level
		// "error" member (docs/wire.md#errors-inside-streams).
		if stream.Err() != nil || strings.Join(types, ",") != "error" {
			t.Errorf("events %v, error %v: want the one error event", types, stream.Err())
		}
	})
}

// TestBreakControl: the control endpoint takes breaks by name, refuses
// unknown ones, and leaves them out of the faults when unset.
func TestBreakControl(t *testing.T) {
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI})
	origin := strings.TrimSuffix(base, "/v1")
	post := func(body string) (int, string) {
		resp, err := http.Post(origin+"/_fake/faults", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := post(`{"cut_after":3}`); status != 200 || strings.Contains(body, "break") {
		t.Errorf("faults without a break: %d %s", status, body)
	}
	status, body := post(`{"break":"mid-error","break_count":2}`)
	if f := s.Faults(); status != 200 || f.Break != fakeprovider.BreakMidError || f.BreakCount != 2 ||
		!strings.Contains(body, `"break":"mid-error","break_count":2`) {
		t.Errorf("set a break: %d %s, faults %+v", status, body, f)
	}
	if status, body := post(`{"break":"sometimes"}`); status != 400 || !strings.Contains(body, "sometimes") {
		t.Errorf("unknown break: %d %s", status, body)
	}
	if err := s.SetFaults(fakeprovider.Faults{Break: 99}); err == nil {
		t.Errorf("SetFaults took break 99")
	}
	for _, name := range []string{"", "half-body", "no-terminal", "opening-error", "mid-error"} {
		if b, err := fakeprovider.ParseBreak(name); err != nil || b.String() != name {
			t.Errorf("ParseBreak(%q) = %v, %v", name, b, err)
		}
	}
}
