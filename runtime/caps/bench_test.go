package caps

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/plan"
)

// Benchmark bodies are built the way SDKs send them: a system prompt, a long
// conversation of prose (escapes and non-ASCII included), tool calls and
// results, and one tool with a JSON schema. The "needles" variant adds the
// capabilities each dialect can carry, so the structural confirm runs over
// the whole body; the "plain" variant has no needle and shows the prefilter
// alone.

var words = strings.Fields(`the gateway reads a request once and forwards its bytes
unchanged; a budget is held before the call and settled after it — naïve caches
miss "quoted" phrases, tabs	and newlines
so every 100 requests a retry may cost 3.5x résumé 東京 data`)

// prose returns about n bytes of deterministic text.
func prose(r *rand.Rand, n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(words[r.IntN(len(words))])
		sb.WriteByte(' ')
	}
	return sb.String()
}

type chatMsg struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type chatReq struct {
	Model          string         `json:"model"`
	Messages       []chatMsg      `json:"messages"`
	Temperature    float64        `json:"temperature"`
	Stream         bool           `json:"stream"`
	StreamOptions  map[string]any `json:"stream_options"`
	Tools          []any          `json:"tools"`
	ReasoningEff   string         `json:"reasoning_effort,omitempty"`
	ResponseFormat any            `json:"response_format,omitempty"`
	PromptCacheKey string         `json:"prompt_cache_key,omitempty"`
}

var searchSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"query": map[string]any{"type": "string", "description": "what to look for"},
		"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50},
	},
	"required":             []string{"query", "limit"},
	"additionalProperties": false,
}

func chatPayload(size int, needles bool) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	fn := map[string]any{"name": "search_docs", "description": "Search the docs.", "parameters": searchSchema}
	req := chatReq{Model: "gpt-4.1", Temperature: 0.2, Stream: true,
		StreamOptions: map[string]any{"include_usage": true},
		Tools:         []any{map[string]any{"type": "function", "function": fn}}}
	if needles {
		fn["strict"] = true
		req.ReasoningEff = "high"
		req.PromptCacheKey = "tenant-42"
		req.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": searchSchema}}
	}
	req.Messages = append(req.Messages, chatMsg{"system", prose(r, 300)})
	return grow(size, func(i int) int {
		text := prose(r, 100+r.IntN(min(size/2, 4000)))
		req.Messages = append(req.Messages, chatMsg{[2]string{"user", "assistant"}[i%2], text})
		return len(text)
	}, func() []byte { return mustJSON(req) })
}

type responsesReq struct {
	Model     string         `json:"model"`
	Input     []any          `json:"input"`
	Tools     []any          `json:"tools"`
	Reasoning map[string]any `json:"reasoning,omitempty"`
	Text      map[string]any `json:"text,omitempty"`
}

func responsesPayload(size int, needles bool) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	tool := map[string]any{"type": "function", "name": "search_docs", "description": "Search the docs.", "parameters": searchSchema}
	req := responsesReq{Model: "gpt-5", Tools: []any{tool}}
	if needles {
		tool["strict"] = true
		req.Reasoning = map[string]any{"effort": "medium", "summary": "auto"}
		req.Text = map[string]any{"format": map[string]any{"type": "json_schema", "name": "answer", "schema": searchSchema}}
	}
	return grow(size, func(int) int {
		text := prose(r, 100+r.IntN(min(size/2, 4000)))
		part := map[string]any{"type": "input_text", "text": text}
		req.Input = append(req.Input, map[string]any{"role": "user", "content": []any{part}})
		return len(text)
	}, func() []byte { return mustJSON(req) })
}

type messagesReq struct {
	Model     string         `json:"model"`
	MaxTokens int            `json:"max_tokens"`
	System    []any          `json:"system"`
	Messages  []chatMsg      `json:"messages"`
	Tools     []any          `json:"tools"`
	Thinking  map[string]any `json:"thinking,omitempty"`
}

func messagesPayload(size int, needles bool) []byte {
	r := rand.New(rand.NewPCG(5, 6))
	system := map[string]any{"type": "text", "text": prose(r, 300)}
	tool := map[string]any{"name": "search_docs", "description": "Search the docs.", "input_schema": searchSchema}
	req := messagesReq{Model: "claude-sonnet-4-5", MaxTokens: 4096, System: []any{system}, Tools: []any{tool}}
	if needles {
		system["cache_control"] = map[string]any{"type": "ephemeral"}
		tool["strict"] = true
		req.Thinking = map[string]any{"type": "enabled", "budget_tokens": 2048}
	}
	return grow(size, func(i int) int {
		id := fmt.Sprintf("toolu_%04d", i)
		ask, say, result := prose(r, 100+r.IntN(min(size/2, 4000))), prose(r, 200), prose(r, 400)
		req.Messages = append(req.Messages,
			chatMsg{"user", []any{map[string]any{"type": "text", "text": ask}}},
			chatMsg{"assistant", []any{
				map[string]any{"type": "text", "text": say},
				map[string]any{"type": "tool_use", "id": id, "name": "search_docs", "input": map[string]any{"query": prose(r, 20), "limit": 5}},
			}},
			chatMsg{"user", []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": result}}},
		)
		return len(ask) + len(say) + len(result)
	}, func() []byte { return mustJSON(req) })
}

// grow adds turns (add returns the text bytes it added) until the
// marshalled body reaches size. It marshals only once the text alone could
// fill it, since the body is always longer than its text.
func grow(size int, add func(turn int) int, marshal func() []byte) []byte {
	text := 0
	for turn := 0; ; turn++ {
		if text >= size {
			if b := marshal(); len(b) >= size {
				return b
			}
		}
		text += add(turn)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func BenchmarkRead(b *testing.B) {
	families := []struct {
		route   plan.Route
		payload func(size int, needles bool) []byte
	}{
		{plan.RouteChatCompletions, chatPayload},
		{plan.RouteResponses, responsesPayload},
		{plan.RouteMessages, messagesPayload},
	}
	for _, fam := range families {
		for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
			for _, needles := range []bool{false, true} {
				body := fam.payload(size, needles)
				want := Read(fam.route, body)
				if (want != 0) != needles {
					b.Fatalf("%s %d needles=%v: body reads as %v", fam.route, size, needles, want)
				}
				name := fmt.Sprintf("%s/%s/%s", fam.route, sizeName(size), map[bool]string{false: "plain", true: "needles"}[needles])
				b.Run(name, func(b *testing.B) {
					b.SetBytes(int64(len(body)))
					b.ReportAllocs()
					for b.Loop() {
						Read(fam.route, body)
					}
				})
			}
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkReaderUnasked is the native-only path: the proxy resets the
// Reader and never asks, so the body is never read.
func BenchmarkReaderUnasked(b *testing.B) {
	body := chatPayload(1<<20, true)
	var r Reader
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(plan.RouteChatCompletions, body)
	}
}

// BenchmarkReadHostile reads 1 MiB bodies shaped to defeat a naive reader:
// a needle on every other byte, one long run of backslashes, and containers
// nested near the depth limit over and over. Each must stay linear.
func BenchmarkReadHostile(b *testing.B) {
	size := 1 << 20
	if testing.Short() {
		size = 64 << 10
	}
	repeat := func(unit string) string { return strings.Repeat(unit, size/len(unit)) }
	nest := strings.Repeat("[", jsonscan.MaxDepth-2) + strings.Repeat("]", jsonscan.MaxDepth-2) + ","
	bodies := map[string]string{
		"needle_every_4_bytes": `{"messages":[` + repeat(`"n",`) + `"n"],"n":2}`,
		"backslash_run":        `{"model":"` + repeat(`\\`) + `","n":2}`,
		"escaped_quotes":       `{"model":"` + repeat(`\"n\"`) + `","n":2}`,
		"deep_nesting":         `{"messages":[` + repeat(nest) + `[]],"n":2}`,
	}
	for name, body := range bodies {
		raw := []byte(body)
		if Read(plan.RouteChatCompletions, raw) != multiChoice {
			b.Fatalf("%s: body does not read as multi_choice", name)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				Read(plan.RouteChatCompletions, raw)
			}
		})
	}
}
