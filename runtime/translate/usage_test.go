package translate

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/meter"
)

// Hostile usage counts: an OpenAI prompt_tokens at the largest count with
// no total, whose total input+output would wrap to 6; Anthropic counts of
// 19 digits (each one fits), whose input (input_tokens plus the cache
// reads and writes) and total would wrap. Saturated, every sum is the
// largest count, as the passthrough meter reads the same bytes.
const (
	hostileOpenAIUsage    = `{"prompt_tokens":18446744073709551615,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":5}}`
	hostileAnthropicUsage = `{"input_tokens":9999999999999999999,"cache_creation_input_tokens":9999999999999999999,` +
		`"cache_read_input_tokens":9999999999999999999,"output_tokens":9999999999999999999}`
	maxCount = "18446744073709551615"
)

// TestHostileUsageSaturates runs both pairs, whole and streamed, on
// hostile counts: the usage billed and the usage written for the client
// saturate, and agree with what the passthrough meter reads.
func TestHostileUsageSaturates(t *testing.T) {
	openAIStream := `data: {"id":"c1","object":"chat.completion.chunk","model":"gpt","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c1","object":"chat.completion.chunk","model":"gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"c1","object":"chat.completion.chunk","model":"gpt","choices":[],"usage":` + hostileOpenAIUsage + "}\n\n" +
		"data: [DONE]\n\n"
	anthropicStream := "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"usage":` + hostileAnthropicUsage + "}}\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9999999999999999999}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	openAIAnswer := `{"id":"c1","model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":` + hostileOpenAIUsage + `}`
	anthropicAnswer := `{"id":"msg_1","type":"message","model":"claude","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":` + hostileAnthropicUsage + `}`
	toAnthropic := []string{`"input_tokens":18446744073709551610`, `"output_tokens":7`} // input less the cached reads
	toOpenAI := []string{`"prompt_tokens":` + maxCount, `"completion_tokens":9999999999999999999`, `"total_tokens":` + maxCount}
	tests := []struct {
		name     string
		shape    meter.Shape
		upstream string
		whole    func([]byte, string) ([]byte, meter.Usage, error)
		stream   func(io.Writer) Stream
		// client is what the answer written for the client must state.
		client []string
	}{
		{"openai upstream, whole", meter.ShapeChat, openAIAnswer, OpenAIToAnthropicResponse, nil, toAnthropic},
		{"openai upstream, streamed", meter.ShapeChat, openAIStream, nil,
			func(w io.Writer) Stream { return NewOpenAIToAnthropicStream(w, "gpt") }, toAnthropic},
		{"anthropic upstream, whole", meter.ShapeMessages, anthropicAnswer, AnthropicToOpenAIResponse, nil, toOpenAI},
		{"anthropic upstream, streamed", meter.ShapeMessages, anthropicStream, nil,
			func(w io.Writer) Stream { return NewAnthropicToOpenAIStream(w, "claude", true) }, toOpenAI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u, metered meter.Usage
			var out []byte
			if tt.whole != nil {
				var err error
				if out, u, err = tt.whole([]byte(tt.upstream), "m"); err != nil {
					t.Fatal(err)
				}
				if metered, err = meter.ReadAnswer(tt.shape, []byte(tt.upstream)); err != nil {
					t.Fatal(err)
				}
			} else {
				u, out = translateStream(t, tt.stream, tt.upstream)
				metered = meterStream(tt.shape, tt.upstream)
			}
			if !u.Reported || u.InputTokens != math.MaxUint64 || u.TotalTokens != math.MaxUint64 {
				t.Errorf("usage %+v: want input and total of the largest count", u)
			}
			for _, want := range tt.client {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("the client's answer lacks %s:\n%s", want, out)
				}
			}
			if metered != u {
				t.Errorf("the translator read %+v, the passthrough meter %+v", u, metered)
			}
		})
	}
}

// translateStream feeds upstream through a new stream translator and
// returns its usage and what it wrote.
func translateStream(t *testing.T, newStream func(io.Writer) Stream, upstream string) (meter.Usage, []byte) {
	t.Helper()
	var w bytes.Buffer
	s := newStream(&w)
	if _, err := s.Write([]byte(upstream)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.Usage(), w.Bytes()
}

// meterStream is what the passthrough meter reads from the same stream,
// its events' data one at a time.
func meterStream(shape meter.Shape, upstream string) meter.Usage {
	var m meter.StreamMeter
	m.Reset(shape)
	for _, line := range strings.Split(upstream, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			m.Event([]byte(data))
		}
	}
	return m.Usage()
}

// TestMessageStartCarriesEarlyInput: an OpenAI-compatible upstream that
// reports usage before the output (vLLM's continuous usage stats: every
// chunk, the role chunk first) has its input counted in the translated
// message_start, where LangChain reads the input and nowhere else; an
// upstream reporting usage only at the end leaves message_start at zero.
// Either way the final message_delta states every count.
func TestMessageStartCarriesEarlyInput(t *testing.T) {
	chunk := func(delta, finish, usage string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta +
			`,"finish_reason":` + finish + `}],"usage":` + usage + "}\n\n"
	}
	early := `{"prompt_tokens":1117,"completion_tokens":0,"total_tokens":1117,"prompt_tokens_details":{"cached_tokens":1024}}`
	final := `{"prompt_tokens":1117,"completion_tokens":2,"total_tokens":1119,"prompt_tokens_details":{"cached_tokens":1024}}`
	fullDelta := `"usage":{"input_tokens":93,"cache_creation_input_tokens":0,"cache_read_input_tokens":1024,"output_tokens":2}`
	for _, tt := range []struct {
		name, upstream, start string
	}{
		{"usage from the role chunk on", chunk(`{"role":"assistant"}`, "null", early) + chunk(`{"content":"Hi"}`, "null", early) +
			chunk(`{}`, `"stop"`, final) + "data: [DONE]\n\n",
			`"usage":{"input_tokens":93,"cache_creation_input_tokens":0,"cache_read_input_tokens":1024,"output_tokens":0}`},
		{"usage after a role chunk, before the text", chunk(`{"role":"assistant"}`, "null", "null") + chunk(`{}`, "null", early) +
			chunk(`{"content":"Hi"}`, "null", "null") + chunk(`{}`, `"stop"`, "null") + `data: {"id":"c1","choices":[],"usage":` + final + "}\n\n" + "data: [DONE]\n\n",
			`"usage":{"input_tokens":93,"cache_creation_input_tokens":0,"cache_read_input_tokens":1024,"output_tokens":0}`},
		{"usage at the end only", chunk(`{"role":"assistant","content":""}`, "null", "null") + chunk(`{"content":"Hi"}`, "null", "null") +
			chunk(`{}`, `"stop"`, "null") + `data: {"id":"c1","choices":[],"usage":` + final + "}\n\n" + "data: [DONE]\n\n",
			`"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, out := translateStream(t, func(w io.Writer) Stream { return NewOpenAIToAnthropicStream(w, "m") }, tt.upstream)
			events := strings.Split(string(out), "\n\n")
			if !strings.HasPrefix(events[0], "event: message_start\n") || !strings.Contains(events[0], tt.start) {
				t.Errorf("first event %s\nwant message_start with %s", events[0], tt.start)
			}
			if !strings.Contains(string(out), "event: message_delta\ndata: ") || !strings.Contains(string(out), fullDelta) {
				t.Errorf("stream %s\nwant a message_delta with %s", out, fullDelta)
			}
		})
	}
}
