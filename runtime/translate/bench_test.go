package translate

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkPerRequest is the cost a translated non-stream request adds: the
// request body one way and the response body back.
func BenchmarkPerRequest(b *testing.B) {
	for _, c := range []struct {
		p             pair
		request, resp string
	}{
		{pairs[0], "request/tools_multiturn", "response/tool_use_thinking"},
		{pairs[1], "request/tools_results", "response/tool_calls"},
	} {
		req := readFile(b, filepath.Join("testdata", c.p.name, c.request), "in.json")
		resp := readFile(b, filepath.Join("testdata", c.p.name, c.resp), "in.json")
		o := Options{UpstreamModel: c.p.upstreamModel, DefaultMaxTokens: 1024}
		b.Run(c.p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(req) + len(resp)))
			for b.Loop() {
				if _, _, err := c.p.request(nil, req, o); err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.p.response(resp, c.p.upstreamModel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStreamChunk is the cost of one streamed upstream event once the
// stream is open: a text delta and a tool-argument delta per pair, against a
// passthrough that only hands the bytes on.
func BenchmarkStreamChunk(b *testing.B) {
	antOpen := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}\n\n")
	oaiOpen := []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n")
	antTextOpen := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	respTextOpen := []byte("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-5\",\"output\":[]}}\n\n" +
		"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n")
	respToolOpen := []byte("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-5\",\"output\":[]}}\n\n" +
		"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"\"}}\n\n")
	chunks := []struct {
		name      string
		open      []byte
		chunk     []byte
		newStream func() Stream
	}{
		{"openai_anthropic/text", antOpen, []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello, world, a few tokens\"}}\n\n"),
			func() Stream { return NewAnthropicToOpenAIStream(io.Discard, "claude-sonnet-4-5", true) }},
		{"openai_anthropic/tool_args", antOpen, []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Pa\"}}\n\n"),
			func() Stream { return NewAnthropicToOpenAIStream(io.Discard, "claude-sonnet-4-5", true) }},
		{"anthropic_openai/text", oaiOpen, []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello, world, a few tokens\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n"),
			func() Stream { return NewOpenAIToAnthropicStream(io.Discard, "gpt-4o") }},
		{"anthropic_openai/tool_args", oaiOpen, []byte("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\": \\\"Pa\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n"),
			func() Stream { return NewOpenAIToAnthropicStream(io.Discard, "gpt-4o") }},
		{"responses_anthropic/text", antTextOpen, []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello, world, a few tokens\"}}\n\n"),
			func() Stream { return NewAnthropicToResponsesStream(io.Discard, "claude-sonnet-4-5", noCustomTools) }},
		{"responses_anthropic/tool_args", antOpen, []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Pa\"}}\n\n"),
			func() Stream { return NewAnthropicToResponsesStream(io.Discard, "claude-sonnet-4-5", noCustomTools) }},
		{"anthropic_responses/text", respTextOpen, []byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hello, world, a few tokens\",\"logprobs\":[]}\n\n"),
			func() Stream { return NewResponsesToAnthropicStream(io.Discard, "gpt-5") }},
		{"anthropic_responses/tool_args", respToolOpen, []byte("event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":3,\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"{\\\"city\\\": \\\"Pa\"}\n\n"),
			func() Stream { return NewResponsesToAnthropicStream(io.Discard, "gpt-5") }},
	}
	for _, c := range chunks {
		b.Run(c.name, func(b *testing.B) {
			s := c.newStream()
			if _, err := s.Write(c.open); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(c.chunk)))
			for b.Loop() {
				if _, err := s.Write(c.chunk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("passthrough", func(b *testing.B) {
		chunk := chunks[2].chunk
		var w bytes.Buffer
		b.ReportAllocs()
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			w.Reset()
			w.Write(chunk)
		}
	})
}
