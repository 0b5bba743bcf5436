package translate

import "testing"

// The Responses stream fuzzers hold the Responses pairs to the rule the
// chat pairs' fuzzers do (fuzz_test.go): no panic, well-formed frames.

func FuzzAnthropicToResponsesStream(f *testing.F) {
	seedStreams(f, "responses_anthropic")
	f.Fuzz(func(t *testing.T, upstream []byte, stride uint8, custom bool) {
		var w frameWriter
		fuzzFeed(NewAnthropicToResponsesStream(&w, "claude", func(string) bool { return custom }), upstream, stride)
		if w.err != nil {
			t.Fatal(w.err)
		}
		if err := validResponsesFrames(w.buf.Bytes()); err != nil {
			t.Fatalf("%v\n%s", err, w.buf.Bytes())
		}
	})
}

func FuzzResponsesToAnthropicStream(f *testing.F) {
	seedStreams(f, "anthropic_responses")
	f.Fuzz(func(t *testing.T, upstream []byte, stride uint8, _ bool) {
		var w frameWriter
		fuzzFeed(NewResponsesToAnthropicStream(&w, "gpt"), upstream, stride)
		if w.err != nil {
			t.Fatal(w.err)
		}
		if err := validAnthropicFrames(w.buf.Bytes()); err != nil {
			t.Fatalf("%v\n%s", err, w.buf.Bytes())
		}
	})
}
