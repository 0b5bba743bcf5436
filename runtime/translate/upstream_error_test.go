package translate

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestUpstreamErrorReported: an error event from the upstream is relayed as
// the client's error frame and kept for the caller, in both pairs; a clean
// stream reports none.
func TestUpstreamErrorReported(t *testing.T) {
	tests := []struct {
		name     string
		new      func(w io.Writer) Stream
		upstream string
		want     string
	}{
		{"anthropic upstream", func(w io.Writer) Stream { return NewAnthropicToOpenAIStream(w, "m", false) },
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":1}}}\n\n" +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			"overloaded_error: Overloaded"},
		{"openai upstream", func(w io.Writer) Stream { return NewOpenAIToAnthropicStream(w, "m") },
			"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n" +
				"data: {\"error\":{\"message\":\"Rate limited\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n",
			"rate_limit_exceeded: Rate limited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			s := tt.new(&out)
			if _, err := s.Write([]byte(tt.upstream)); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			err := s.UpstreamError()
			if !errors.Is(err, ErrUpstreamReported) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("UpstreamError() = %v, want %q", err, tt.want)
			}
			if !strings.Contains(out.String(), "error") {
				t.Errorf("no error frame in %s", out.String())
			}
		})
	}
	clean := NewAnthropicToOpenAIStream(io.Discard, "m", false)
	if clean.UpstreamError() != nil {
		t.Errorf("a fresh stream reports an upstream error")
	}
}
