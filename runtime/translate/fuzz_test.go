package translate

import (
	"bytes"
	"path/filepath"
	"testing"
)

// The stream fuzzers feed arbitrary upstream bytes, cut at an arbitrary
// stride, and require no panic and only well-formed client frames, each
// client write ending on a frame boundary.

func FuzzAnthropicToOpenAIStream(f *testing.F) {
	seedStreams(f, "openai_anthropic")
	f.Fuzz(func(t *testing.T, upstream []byte, stride uint8, includeUsage bool) {
		var w frameWriter
		fuzzFeed(NewAnthropicToOpenAIStream(&w, "claude", includeUsage), upstream, stride)
		if w.err != nil {
			t.Fatal(w.err)
		}
		if err := validOpenAIFrames(w.buf.Bytes()); err != nil {
			t.Fatalf("%v\n%s", err, w.buf.Bytes())
		}
	})
}

func FuzzOpenAIToAnthropicStream(f *testing.F) {
	seedStreams(f, "anthropic_openai")
	f.Fuzz(func(t *testing.T, upstream []byte, stride uint8, _ bool) {
		var w frameWriter
		fuzzFeed(NewOpenAIToAnthropicStream(&w, "gpt"), upstream, stride)
		if w.err != nil {
			t.Fatal(w.err)
		}
		if err := validAnthropicFrames(w.buf.Bytes()); err != nil {
			t.Fatalf("%v\n%s", err, w.buf.Bytes())
		}
	})
}

func seedStreams(f *testing.F, pair string) {
	files, _ := filepath.Glob(filepath.Join("testdata", pair, "stream", "*", "in.sse"))
	if len(files) == 0 {
		f.Fatal("no stream fixtures to seed from")
	}
	for _, file := range files {
		f.Add(readFile(f, filepath.Dir(file), "in.sse"), uint8(7), true)
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-3,\"id\":5}]}}]}\n\n"), uint8(0), false)
	f.Add(bytes.Repeat([]byte("data: [DONE]\n\n"), 3), uint8(1), false)
}

func fuzzFeed(s Stream, upstream []byte, stride uint8) {
	n := int(stride) + 1
	for len(upstream) > 0 {
		c := min(n, len(upstream))
		_, _ = s.Write(upstream[:c])
		upstream = upstream[c:]
	}
	_ = s.Close()
	_ = s.Usage()
}
