package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// verdict is what one request came to, as its client saw it byte for byte.
type verdict int

const (
	// served: a 2xx answer, whole: a stream that ended with its terminal
	// event after a finish reason, a JSON body complete and carrying the
	// text the fake said for this request.
	served verdict = iota
	// cleanError: an error status with a well-formed error body in the
	// client's dialect, or a stream ended by an error event in its shape.
	cleanError
	// abandoned: the client gave up on purpose, at a random moment; not
	// judged, but what pistrad holds for it must be let go like the rest.
	abandoned
	// hung: no answer, or no end to it, within the hang bound.
	hung
	// empty: a 2xx with no body, or the connection closed with no response.
	empty
	// truncated: a 2xx stream that ended with neither its terminal event
	// nor an error event, or a whole 2xx body that is not complete JSON.
	truncated
	// malformed: an error status whose body is not the dialect's error
	// shape.
	malformed
	// corrupt: a complete 2xx answer that is not this request's: another
	// dialect's shape, the wrong text, no finish reason.
	corrupt
	numVerdicts
)

var verdictNames = [numVerdicts]string{"served", "clean error", "abandoned", "hung", "empty reply", "silently truncated", "malformed error", "corrupt answer"}

func (v verdict) String() string { return verdictNames[v] }

// bad reports the verdicts that fail the run.
func (v verdict) bad() bool { return v > abandoned }

// outcome is a verdict with what it rests on: for a clean error, the
// status (or "stream" for an in-band error event); otherwise a detail to
// print when the verdict is bad.
type outcome struct {
	verdict verdict
	status  string
	detail  string
}

// answer is the bytes a client received.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	readErr error // how reading the body ended, when not at EOF
}

// classify judges an answer to request s.
func classify(s spec, a answer) outcome {
	anthropic, stream, want := s.anthropic, s.stream, s.want()
	if a.status < 200 || a.status > 299 {
		if a.readErr != nil {
			return outcome{verdict: malformed, detail: fmt.Sprintf("%d with a body cut short: %v", a.status, a.readErr)}
		}
		if wellFormedError(anthropic, a.body) {
			return outcome{verdict: cleanError, status: strconv.Itoa(a.status)}
		}
		return outcome{verdict: malformed, detail: fmt.Sprintf("%d %s", a.status, clip(a.body))}
	}
	if len(a.body) == 0 {
		return outcome{verdict: empty, detail: fmt.Sprintf("%d, no body (read: %v)", a.status, a.readErr)}
	}
	if strings.HasPrefix(a.header.Get("Content-Type"), "text/event-stream") {
		if !stream {
			return outcome{verdict: corrupt, detail: "a stream answered a request that asked for none"}
		}
		return classifyStream(anthropic, s.usage, a, want)
	}
	if stream {
		return outcome{verdict: corrupt, detail: "a whole body answered a stream request: " + clip(a.body)}
	}
	return classifyWhole(anthropic, a, want)
}

func classifyWhole(anthropic bool, a answer, want string) outcome {
	if a.readErr != nil || !json.Valid(a.body) {
		return outcome{verdict: truncated, detail: fmt.Sprintf("%d bytes of JSON, read: %v", len(a.body), a.readErr)}
	}
	var text, finish string
	if anthropic {
		var m struct {
			Type    string `json:"type"`
			Content []struct {
				Type, Text string
			} `json:"content"`
			StopReason string `json:"stop_reason"`
		}
		_ = json.Unmarshal(a.body, &m)
		if m.Type != "message" {
			return outcome{verdict: corrupt, detail: "not a message: " + clip(a.body)}
		}
		for _, b := range m.Content {
			text += b.Text
		}
		finish = m.StopReason
	} else {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Message      struct{ Content string } `json:"message"`
				FinishReason string                   `json:"finish_reason"`
			} `json:"choices"`
		}
		_ = json.Unmarshal(a.body, &c)
		if c.Object != "chat.completion" || len(c.Choices) != 1 {
			return outcome{verdict: corrupt, detail: "not a chat completion: " + clip(a.body)}
		}
		text, finish = c.Choices[0].Message.Content, c.Choices[0].FinishReason
	}
	return judgeText(text, finish, want)
}

func judgeText(text, finish, want string) outcome {
	switch {
	case finish == "":
		return outcome{verdict: corrupt, detail: "no finish reason"}
	case text != want:
		return outcome{verdict: corrupt, detail: fmt.Sprintf("text %q, want %q", text, want)}
	}
	return outcome{verdict: served}
}

// sseEvent is one server-sent event: its event: name and data: payload.
type sseEvent struct {
	name string
	data []byte
}

// events splits an event stream; an event the stream broke off inside is
// dropped, as an SSE client drops it.
func events(b []byte) []sseEvent {
	var out []sseEvent
	for {
		i := bytes.Index(b, []byte("\n\n"))
		if i < 0 {
			return out
		}
		var ev sseEvent
		for line := range bytes.SplitSeq(b[:i], []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
				ev.name = string(bytes.TrimSpace(v))
			} else if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				ev.data = append(ev.data, bytes.TrimPrefix(v, []byte(" "))...)
			}
		}
		out = append(out, ev)
		b = b[i+2:]
	}
}

// classifyStream reads a 2xx event stream: an error event anywhere makes
// it a clean error; otherwise it is served only when it ends with its
// terminal event after a finish reason, and, for OpenAI, carries a usage
// chunk exactly when the client asked for one (wantUsage): pistra asks
// for usage on every client's behalf and must remove what it asked for.
func classifyStream(anthropic, wantUsage bool, a answer, want string) outcome {
	var text, finish string
	terminal, usage := false, false
	for _, ev := range events(a.body) {
		if terminal {
			return outcome{verdict: corrupt, detail: "events after the terminal event"}
		}
		if anthropic {
			if ev.name == "error" {
				return streamError(anthropic, ev.data)
			}
			var e struct {
				Type  string `json:"type"`
				Delta struct {
					Type, Text string
					StopReason string `json:"stop_reason"`
				} `json:"delta"`
			}
			if json.Unmarshal(ev.data, &e) != nil || e.Type != ev.name {
				return outcome{verdict: corrupt, detail: "unreadable event " + ev.name + ": " + clip(ev.data)}
			}
			switch e.Type {
			case "content_block_delta":
				text += e.Delta.Text
			case "message_delta":
				finish = e.Delta.StopReason
			case "message_stop":
				terminal = true
			}
			continue
		}
		if string(ev.data) == "[DONE]" {
			terminal = true
			continue
		}
		var c struct {
			Error   json.RawMessage `json:"error"`
			Usage   json.RawMessage `json:"usage"`
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal(ev.data, &c) != nil {
			return outcome{verdict: corrupt, detail: "unreadable chunk: " + clip(ev.data)}
		}
		if c.Error != nil {
			return streamError(anthropic, ev.data)
		}
		usage = usage || (c.Usage != nil && string(c.Usage) != "null")
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if !terminal {
		return outcome{verdict: truncated, detail: fmt.Sprintf("%d bytes, no terminal event, no error event (read: %v): ...%s",
			len(a.body), a.readErr, clipEnd(a.body))}
	}
	if !anthropic && usage != wantUsage {
		return outcome{verdict: corrupt, detail: fmt.Sprintf("usage chunk: got %v, asked for %v", usage, wantUsage)}
	}
	return judgeText(text, finish, want)
}

// streamError judges an error event: clean when it is the dialect's shape.
func streamError(anthropic bool, data []byte) outcome {
	if wellFormedError(anthropic, data) {
		return outcome{verdict: cleanError, status: "stream"}
	}
	return outcome{verdict: malformed, detail: "error event " + clip(data)}
}

// wellFormedError reports whether b is an error body of the dialect:
// OpenAI {"error":{"message","type",...}}, Anthropic {"type":"error",
// "error":{"type","message"}}.
func wellFormedError(anthropic bool, b []byte) bool {
	var e struct {
		Type  string `json:"type"`
		Error *struct {
			Type    *string `json:"type"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Type == nil || e.Error.Message == nil || *e.Error.Message == "" {
		return false
	}
	return !anthropic || e.Type == "error"
}

func clip(b []byte) string {
	if len(b) > 160 {
		return string(b[:160]) + "..."
	}
	return string(b)
}

func clipEnd(b []byte) string {
	if len(b) > 120 {
		b = b[len(b)-120:]
	}
	return strings.ReplaceAll(string(b), "\n", `\n`)
}
