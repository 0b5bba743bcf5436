package meter

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Chat chunks as OpenAI writes them (docs/wire.md#chat-completions-streams), with a usage member
// spliced in where a case wants one.
const (
	chunkHead = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","system_fingerprint":"fp_1",`
	chunkRole = chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]`
	chunkText = chunkHead + `"choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]`
	chunkStop = chunkHead + `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]`
	chunkNone = chunkHead + `"choices":[]`
	chatUsage = `"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}`
)

var chatUsageWant = Usage{InputTokens: 9, CachedInputTokens: 4, OutputTokens: 12, TotalTokens: 21, ReasoningTokens: 2, Reported: true}

// gemini is a chunk of Gemini's compat stream, which restates the running
// usage on every chunk.
func gemini(text string, in, out int) string {
	return `{"choices":[{"delta":{"content":"` + text + `","role":"assistant"},"index":0}],"created":1764000000,"id":"g1","model":"gemini-2.5-flash","object":"chat.completion.chunk",` +
		`"usage":{"completion_tokens":` + strconv.Itoa(out) + `,"prompt_tokens":` + strconv.Itoa(in) + `,"total_tokens":` + strconv.Itoa(in+out) + `}}`
}

// delta is an Anthropic message_delta restating the given usage members.
func delta(usage string) string {
	return `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{` + usage + `}}`
}

// Responses events (docs/wire.md#responses-streams); terminal wraps a response object around
// the status-specific members and a usage.
const respUsage = `"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":8},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":123}`

func respEvent(typ, response string) string {
	return `{"type":"` + typ + `","sequence_number":9,"response":{"id":"resp_1","object":"response","model":"gpt-5-mini","output":[],` + response + `}}`
}

var respUsageWant = Usage{InputTokens: 36, CachedInputTokens: 8, OutputTokens: 87, TotalTokens: 123, ReasoningTokens: 64, Reported: true}

// Anthropic events (docs/wire.md#messages-streams).
const (
	msgStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,` +
		`"usage":{"input_tokens":21,"cache_creation_input_tokens":100,"cache_read_input_tokens":1873,"output_tokens":1}}}`
	msgBlock = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	msgText  = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`
	msgPing  = `{"type": "ping"}`
	msgStop  = `{"type":"message_stop"}`
)

type streamCase struct {
	name   string
	shape  Shape
	events []string
	flags  []Event // one per event
	want   Usage
	ended  bool
	err    string // a substring of UpstreamError, "" for none
}

var streamCases = []streamCase{
	{name: "chat include_usage", shape: ShapeChat,
		events: []string{chunkRole + `,"usage":null}`, chunkText + `,"usage":null}`, chunkStop + `,"usage":null}`, chunkNone + "," + chatUsage + "}", "[DONE]"},
		flags:  []Event{0, 0, 0, UsageOnly, Terminal}, want: chatUsageWant, ended: true},
	{name: "chat without usage", shape: ShapeChat,
		events: []string{chunkRole + `}`, chunkText + `}`, chunkStop + `}`, " [DONE]\n"},
		flags:  []Event{0, 0, 0, Terminal}, ended: true},
	{name: "chat usage alongside choices in the final chunk", shape: ShapeChat,
		events: []string{chunkText + `}`, chunkStop + "," + chatUsage + "}", "[DONE]"},
		flags:  []Event{0, 0, Terminal}, want: chatUsageWant, ended: true},
	{name: "chat early-terminated", shape: ShapeChat,
		events: []string{chunkRole + `,"usage":null}`, chunkText + `,"usage":null}`},
		flags:  []Event{0, 0}},
	{name: "chat early-terminated after its usage", shape: ShapeChat,
		events: []string{chunkStop + `,"usage":null}`, chunkNone + "," + chatUsage + "}"},
		flags:  []Event{0, UsageOnly}, want: chatUsageWant},
	{name: "Gemini running usage: the last, never the sum", shape: ShapeChat,
		events: []string{gemini("Hel", 7, 1), gemini("lo", 7, 2), gemini("!", 7, 5), "[DONE]"},
		flags:  []Event{0, 0, 0, Terminal}, want: Usage{InputTokens: 7, OutputTokens: 5, TotalTokens: 12, Reported: true}, ended: true},
	{name: "chat null usage leaves the usage read", shape: ShapeChat,
		events: []string{chunkNone + "," + chatUsage + "}", chunkNone + `,"usage":null}`},
		flags:  []Event{UsageOnly, 0}, want: chatUsageWant},
	{name: "legacy completions", shape: ShapeChat,
		events: []string{`{"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":"Hi","index":0,"logprobs":null,"finish_reason":null}],"model":"m","usage":null}`,
			`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}}`, "[DONE]"},
		flags: []Event{0, UsageOnly, Terminal}, want: Usage{InputTokens: 5, OutputTokens: 16, TotalTokens: 21, Reported: true}, ended: true},
	{name: "chat usage-only test is narrow", shape: ShapeChat,
		events: []string{
			// metadata only
			chunkNone + `,"service_tier":"default","obfuscation":"x1y2","provider":"OpenAI","x_groq":{"id":"req_1"},` + chatUsage + "}",
			// a member it cannot classify, null
			chunkNone + `,"provider_specific_fields":null,` + chatUsage + "}",
			// a member it cannot classify
			chunkNone + `,"citations":["https://example.com"],` + chatUsage + "}",
			// choices given twice
			chunkNone + `,"choices":[{"index":0,"delta":{"content":"x"}}],` + chatUsage + "}",
			// choices not an array
			chunkHead + `"choices":null,` + chatUsage + "}",
			// no choices
			chunkHead + chatUsage + "}",
			// no usage
			chunkNone + `,"usage":null}`,
			// usage not an object
			chunkNone + `,"usage":[]}`,
			// a spelling it does not read
			chunkNone + `,"usag\u0065":{"prompt_tokens":1}}`,
		},
		flags: []Event{UsageOnly, UsageOnly, 0, 0, 0, 0, 0, 0, 0}, want: chatUsageWant},
	{name: "chat mid-stream error", shape: ShapeChat,
		events: []string{chunkText + `}`, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`},
		flags:  []Event{0, Error}, err: "upstream stream error: server_error: The server had an error"},
	{name: "chat error beside usage is not usage-only", shape: ShapeChat,
		events: []string{chunkNone + `,"error":"quota",` + chatUsage + "}"},
		flags:  []Event{Error}, want: chatUsageWant, err: "quota"},
	{name: "chat null error is none", shape: ShapeChat,
		events: []string{chunkText + `,"error":null}`}, flags: []Event{0}},
	{name: "chat events it cannot read are content and leave the usage", shape: ShapeChat,
		events: []string{chunkNone + "," + chatUsage + "}", chunkNone + `,"usage":{"prompt_tokens":1}`, ``, `: keepalive`, `[1,2]`, `"[DONE]"`, `{"usage":{"prompt_tokens":2}}x`, `[DONE`},
		flags:  []Event{UsageOnly, 0, 0, 0, 0, 0, 0, 0}, want: chatUsageWant},

	{name: "responses completed", shape: ShapeResponses,
		events: []string{respEvent("response.created", `"status":"in_progress","usage":null`), respEvent("response.in_progress", `"status":"in_progress","usage":null`),
			`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","logprobs":[]}`,
			`{"type":"keepalive","sequence_number":5}`,
			respEvent("response.completed", `"status":"completed","error":null,`+respUsage)},
		flags: []Event{0, 0, 0, 0, Terminal}, want: respUsageWant, ended: true},
	{name: "responses usage before type", shape: ShapeResponses,
		events: []string{`{"response":{` + respUsage + `},"type":"response.completed"}`},
		flags:  []Event{Terminal}, want: respUsageWant, ended: true},
	{name: "responses incomplete", shape: ShapeResponses,
		events: []string{respEvent("response.created", `"usage":null`),
			respEvent("response.incomplete", `"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},`+respUsage)},
		flags: []Event{0, Terminal}, want: respUsageWant, ended: true},
	{name: "responses failed", shape: ShapeResponses,
		events: []string{respEvent("response.created", `"usage":null`),
			respEvent("response.failed", `"status":"failed","error":{"code":"server_error","message":"The model failed"},`+respUsage)},
		flags: []Event{0, Terminal | Error}, want: respUsageWant, ended: true, err: "upstream stream error: server_error: The model failed"},
	{name: "responses failed without an error object", shape: ShapeResponses,
		events: []string{respEvent("response.failed", `"status":"failed","error":null,"usage":null`)},
		flags:  []Event{Terminal | Error}, ended: true, err: "upstream stream error: response.failed"},
	{name: "responses done, seen in the wild", shape: ShapeResponses,
		events: []string{respEvent("response.done", respUsage)},
		flags:  []Event{Terminal}, want: respUsageWant, ended: true},
	{name: "responses error event", shape: ShapeResponses,
		events: []string{respEvent("response.created", `"usage":null`), `{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":2}`},
		flags:  []Event{0, Error}, err: "upstream stream error: rate_limit_exceeded: Slow down"},
	{name: "responses early-terminated", shape: ShapeResponses,
		events: []string{respEvent("response.created", `"usage":null`), `{"type":"response.output_text.delta","delta":"Hel"}`},
		flags:  []Event{0, 0}},
	{name: "responses [DONE] is not its terminator", shape: ShapeResponses,
		events: []string{"[DONE]"}, flags: []Event{0}},

	{name: "messages", shape: ShapeMessages,
		events: []string{msgStart, msgBlock, msgPing, msgText, `{"type":"content_block_stop","index":0}`, delta(`"output_tokens":15`), msgStop},
		flags:  []Event{0, 0, 0, 0, 0, 0, Terminal},
		want:   Usage{InputTokens: 1994, CachedInputTokens: 1873, CacheCreationInputTokens: 100, OutputTokens: 15, TotalTokens: 2009, Reported: true}, ended: true},
	{name: "messages server-tool run: cumulative counts overwrite, field by field", shape: ShapeMessages,
		events: []string{msgStart, msgText,
			delta(`"input_tokens":410,"cache_creation_input_tokens":null,"cache_read_input_tokens":1873,"output_tokens":60,"server_tool_use":{"web_search_requests":1}`),
			msgText, delta(`"input_tokens":820,"output_tokens":130`),
			msgText, delta(`"output_tokens":171,"output_tokens_details":{"thinking_tokens":33}`), msgStop},
		flags: []Event{0, 0, 0, 0, 0, 0, 0, Terminal},
		want: Usage{InputTokens: 820 + 1873 + 100, CachedInputTokens: 1873, CacheCreationInputTokens: 100, OutputTokens: 171,
			TotalTokens: 820 + 1873 + 100 + 171, ReasoningTokens: 33, Reported: true}, ended: true},
	{name: "messages early-terminated", shape: ShapeMessages,
		events: []string{msgStart, msgText, delta(`"output_tokens":2`)},
		flags:  []Event{0, 0, 0},
		want:   Usage{InputTokens: 1994, CachedInputTokens: 1873, CacheCreationInputTokens: 100, OutputTokens: 2, TotalTokens: 1996, Reported: true}},
	{name: "messages error event", shape: ShapeMessages,
		events: []string{msgStart, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`},
		flags:  []Event{0, Error},
		want:   Usage{InputTokens: 1994, CachedInputTokens: 1873, CacheCreationInputTokens: 100, OutputTokens: 1, TotalTokens: 1995, Reported: true},
		err:    "upstream stream error: overloaded_error: Overloaded"},
	{name: "messages malformed delta leaves the usage", shape: ShapeMessages,
		events: []string{msgStart, `{"type":"message_delta","usage":{"output_tokens":900}`, `{"type":"message_stop"`},
		flags:  []Event{0, 0, 0},
		want:   Usage{InputTokens: 1994, CachedInputTokens: 1873, CacheCreationInputTokens: 100, OutputTokens: 1, TotalTokens: 1995, Reported: true}},
}

func TestStreamMeter(t *testing.T) {
	var m StreamMeter // one meter for every case: Reset must leave nothing behind
	for _, c := range streamCases {
		t.Run(c.name, func(t *testing.T) {
			m.Reset(c.shape)
			for i, ev := range c.events {
				if got := m.Event([]byte(ev)); got != c.flags[i] {
					t.Errorf("event %d %.60q: flags %03b, want %03b", i, ev, got, c.flags[i])
				}
			}
			if got := m.Usage(); got != c.want {
				t.Errorf("usage %+v\nwant  %+v", got, c.want)
			}
			if m.Ended() != c.ended {
				t.Errorf("Ended %v, want %v", m.Ended(), c.ended)
			}
			err := m.UpstreamError()
			switch {
			case c.err == "" && err != nil:
				t.Errorf("UpstreamError %v, want none", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("UpstreamError %v, want %q", err, c.err)
			}
		})
	}
}

// TestUpstreamErrorIsBounded: the upstream chooses how long its message
// is; the description keeps a few hundred bytes of it, whole characters
// and escapes only.
func TestUpstreamErrorIsBounded(t *testing.T) {
	for _, msg := range []string{strings.Repeat("é", 1000), strings.Repeat(`\n`, 1000), strings.Repeat("a", 255) + `\u00e9\u00e9`, strings.Repeat("\xff", 300)} {
		var m StreamMeter
		m.Reset(ShapeMessages)
		m.Event([]byte(`{"type":"error","error":{"type":"` + strings.Repeat("t", 500) + `","message":"` + msg + `"}}`))
		err := m.UpstreamError()
		if err == nil || len(err.Error()) > 400 || !strings.HasPrefix(err.Error(), "upstream stream error: ttt") {
			t.Fatalf("message %.20q: UpstreamError %.80q (%d bytes)", msg, err, len(err.Error()))
		}
		if s := err.Error(); !utf8.ValidString(s) {
			t.Errorf("message %.20q: description is not UTF-8: %q", msg, s)
		}
	}
}

func TestClientFault(t *testing.T) {
	for data, want := range map[string]bool{
		`{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"too long"}}`: true,
		`{"error":{"type":"server_error","message":"boom"}}`:                                               false,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`:                      false,
		`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`:                        true,
	} {
		var m StreamMeter
		shape := ShapeChat
		if strings.Contains(data, `"type":"error"`) {
			shape = ShapeMessages
		}
		m.Reset(shape)
		if ev := m.Event([]byte(data)); ev&Error == 0 || m.ClientFault() != want {
			t.Errorf("%s: event %v, client fault %v, want %v", data, ev, m.ClientFault(), want)
		}
	}
}
