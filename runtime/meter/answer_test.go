package meter

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// Answers in the shapes the upstreams send (docs/wire.md#usage-at-a-glance).
const (
	chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1764000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,` +
		`"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0,"cache_write_tokens":64},` +
		`"completion_tokens_details":{"reasoning_tokens":12,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`
	embeddingsAnswer = `{"object":"list","model":"text-embedding-3-small",` +
		`"data":[{"object":"embedding","index":0,"embedding":[0.0023,-0.0093,1e-3]}],` +
		`"usage":{"prompt_tokens":8,"total_tokens":8}}`
	completionsAnswer = `{"id":"cmpl-1","object":"text_completion","created":1764000000,"model":"gpt-3.5-turbo-instruct","system_fingerprint":null,` +
		`"choices":[{"text":"\n\nHi","index":0,"logprobs":null,"finish_reason":"length"}],` +
		`"usage":{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}}`
	responsesAnswer = `{"id":"resp_1","object":"response","created_at":1764000000,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5-mini",` +
		`"output":[{"id":"rs_1","type":"reasoning","summary":[]},{"id":"msg_1","type":"message","status":"completed","role":"assistant",` +
		`"content":[{"type":"output_text","text":"Hello!","annotations":[],"logprobs":[]}]}],"reasoning":{"effort":"low","summary":null},"metadata":{},` +
		`"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":16,"cache_write_tokens":4},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":123}}`
	messagesAnswer = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-haiku-4-5",` +
		`"content":[{"type":"thinking","thinking":"The user wants…","signature":"EqQB"},{"type":"text","text":"I'll look that up."},` +
		`{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris","usage":{"input_tokens":999}}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"stop_details":null,` +
		`"usage":{"input_tokens":21,"cache_creation_input_tokens":188,"cache_read_input_tokens":1873,` +
		`"cache_creation":{"ephemeral_5m_input_tokens":188,"ephemeral_1h_input_tokens":0},` +
		`"output_tokens":95,"output_tokens_details":{"thinking_tokens":40},"service_tier":"standard","server_tool_use":{"web_search_requests":1}}}`
)

func TestReadAnswer(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape Shape
		body  string
		want  Usage
	}{
		{"chat", ShapeChat, chatAnswer, Usage{1117, 1024, 64, 46, 1163, 12, true}},
		{"embeddings", ShapeChat, embeddingsAnswer, Usage{InputTokens: 8, TotalTokens: 8, Reported: true}},
		{"legacy completions", ShapeChat, completionsAnswer, Usage{InputTokens: 5, OutputTokens: 16, TotalTokens: 21, Reported: true}},
		{"chat null details", ShapeChat, `{"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,"prompt_tokens_details":null,"completion_tokens_details":null}}`,
			Usage{InputTokens: 9, OutputTokens: 3, TotalTokens: 12, Reported: true}},
		{"chat total missing", ShapeChat, `{"usage":{"prompt_tokens":9,"completion_tokens":3}}`,
			Usage{InputTokens: 9, OutputTokens: 3, TotalTokens: 12, Reported: true}},
		{"chat total zero, as translate reads it", ShapeChat, `{"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":0}}`,
			Usage{InputTokens: 9, OutputTokens: 3, TotalTokens: 12, Reported: true}},
		{"chat total saturates", ShapeChat, `{"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":3}}`,
			Usage{InputTokens: math.MaxUint64, OutputTokens: 3, TotalTokens: math.MaxUint64, Reported: true}},
		{"chat counts not written as integers are absent", ShapeChat,
			`{"usage":{"prompt_tokens":"9","completion_tokens":3.0,"total_tokens":-1,"prompt_tokens_details":{"cached_tokens":1e2},"completion_tokens_details":[1]}}`,
			Usage{Reported: true}},
		{"chat empty usage object", ShapeChat, `{"usage":{}}`, Usage{Reported: true}},
		{"chat no usage", ShapeChat, `{"id":"x","choices":[{"message":{"content":"usage: none"}}]}`, Usage{}},
		{"chat null usage", ShapeChat, `{"usage":null}`, Usage{}},
		{"chat usage not an object", ShapeChat, `{"usage":[{"prompt_tokens":9}]}`, Usage{}},
		{"usage nested elsewhere is not the answer's", ShapeChat, `{"choices":[{"usage":{"prompt_tokens":5}}],"x":{"usage":{"prompt_tokens":6}}}`, Usage{}},
		{"usage given twice: the last", ShapeChat, `{"usage":{"prompt_tokens":5,"completion_tokens":1},"usage":{"prompt_tokens":7}}`,
			Usage{InputTokens: 7, TotalTokens: 7, Reported: true}},
		{"not an object", ShapeChat, `[{"usage":{"prompt_tokens":5}}]`, Usage{}},
		{"responses", ShapeResponses, responsesAnswer, Usage{36, 16, 4, 87, 123, 64, true}},
		{"responses null details", ShapeResponses, `{"usage":{"input_tokens":3,"input_tokens_details":null,"output_tokens":2,"output_tokens_details":null}}`,
			Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5, Reported: true}},
		{"responses names are not chat's", ShapeResponses, `{"usage":{"prompt_tokens":3,"completion_tokens":2}}`, Usage{Reported: true}},
		{"messages", ShapeMessages, messagesAnswer, Usage{21 + 188 + 1873, 1873, 188, 95, 21 + 188 + 1873 + 95, 40, true}},
		{"messages null cache fields", ShapeMessages, `{"usage":{"input_tokens":12,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":4}}`,
			Usage{InputTokens: 12, OutputTokens: 4, TotalTokens: 16, Reported: true}},
		{"messages input saturates", ShapeMessages, `{"usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":2,"output_tokens":4}}`,
			Usage{InputTokens: math.MaxUint64, CachedInputTokens: 2, OutputTokens: 4, TotalTokens: math.MaxUint64, Reported: true}},
		{"messages without input or output is unreported, as translate reads it", ShapeMessages, `{"usage":{"cache_read_input_tokens":2}}`,
			Usage{InputTokens: 2, CachedInputTokens: 2, TotalTokens: 2}},
		{"messages error body", ShapeMessages, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, Usage{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadAnswer(c.shape, []byte(c.body))
			if err != nil {
				t.Fatalf("ReadAnswer: %v", err)
			}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestReadAnswerRefusesBrokenBodies: every proper prefix of an answer is a
// body cut short, and trailing bytes or a second document are not one
// document either.
func TestReadAnswerRefusesBrokenBodies(t *testing.T) {
	for shape, body := range map[Shape]string{ShapeChat: chatAnswer, ShapeResponses: responsesAnswer, ShapeMessages: messagesAnswer} {
		for n := range len(body) {
			if _, err := ReadAnswer(shape, []byte(body[:n])); err == nil {
				t.Fatalf("shape %d: body cut at %d of %d accepted: %q", shape, n, len(body), body[:n])
			}
		}
	}
	for _, body := range []string{`{}x`, `{}{}`, `{"usage":{"prompt_tokens":01}}`, `{"a":"` + "\x01" + `"}`,
		`{"usage":{"prompt_tokens":1,}}`, strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1)} {
		_, err := ReadAnswer(ShapeChat, []byte(body))
		if !errors.Is(err, jsonscan.ErrSyntax) && !errors.Is(err, jsonscan.ErrDepth) {
			t.Errorf("%.40q: err %v, want a jsonscan error", body, err)
		}
	}
}
