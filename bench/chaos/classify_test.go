package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// TestClassifyUpstreamFaults holds the judge to what a gateway that let
// the faults through would pass on: each request goes straight to a fake
// upstream that breaks it, raw and through the SDKs, and must get the
// verdict that fails the run; a served answer and a clean error must get
// the same verdict from the SDK.
func TestClassifyUpstreamFaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		anthropic bool
		stream    bool
		faults    fakeprovider.Faults
		want      verdict
	}{
		{"clean answer", false, false, fakeprovider.Faults{}, served},
		{"clean stream", false, true, fakeprovider.Faults{}, served},
		{"clean anthropic stream", true, true, fakeprovider.Faults{}, served},
		{"error status", true, false, fakeprovider.Faults{FailStatus: 529}, cleanError},
		{"opening error event", false, true, fakeprovider.Faults{Break: fakeprovider.BreakOpeningError}, cleanError},
		{"mid-stream error event", true, true, fakeprovider.Faults{Break: fakeprovider.BreakMidError}, cleanError},
		{"no [DONE]", false, true, fakeprovider.Faults{Break: fakeprovider.BreakNoTerminal}, truncated},
		{"no message_stop", true, true, fakeprovider.Faults{Break: fakeprovider.BreakNoTerminal}, truncated},
		{"cut stream", false, true, fakeprovider.Faults{CutAfter: 2}, truncated},
		{"cut anthropic stream", true, true, fakeprovider.Faults{CutAfter: 3}, truncated},
		{"half body", false, false, fakeprovider.Faults{Break: fakeprovider.BreakHalfBody}, truncated},
		{"half anthropic body", true, false, fakeprovider.Faults{Break: fakeprovider.BreakHalfBody}, truncated},
		{"stall past the hang bound", false, false, fakeprovider.Faults{FirstByteDelay: 2 * time.Second}, hung},
		{"stream stalled past the hang bound", true, true, fakeprovider.Faults{ChunkDelay: 2 * time.Second}, hung},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fakeprovider.DialectOpenAI
			if tc.anthropic {
				d = fakeprovider.DialectAnthropic
			}
			_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: d, Key: clientKey, Faults: tc.faults})
			origin := strings.TrimSuffix(base, "/v1")
			sdk := newSDKClients(origin, http.DefaultTransport)
			for _, viaSDK := range []bool{false, true} {
				s := spec{index: 1, anthropic: tc.anthropic, model: "m", stream: tc.stream, usage: true, sdk: viaSDK, prompt: "judge this answer"}
				var o outcome
				agrees := true
				if viaSDK {
					o, agrees, _ = sdk.sendSDK(s, time.Second)
				} else {
					o = sendRaw(http.DefaultClient, origin, s, time.Second)
				}
				if o.verdict != tc.want || !agrees {
					t.Errorf("sdk=%v: %s (%s), SDK agrees %v; want %s", viaSDK, o.verdict, o.detail, agrees, tc.want)
				}
			}
		})
	}
}

// TestClassifyBytes: answers no fake sends, judged from their bytes.
func TestClassifyBytes(t *testing.T) {
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	js := http.Header{"Content-Type": {"application/json"}}
	s := spec{prompt: "judge these bytes"}
	// chunk is an OpenAI chat chunk; finish "" is null.
	chunk := func(content, finish string) string {
		f := "null"
		if finish != "" {
			f = strconv.Quote(finish)
		}
		return fmt.Sprintf("data: {\"choices\":[{\"delta\":{\"content\":%q},\"finish_reason\":%s}]}\n\n", content, f)
	}
	const usageChunk, done = "data: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\n", "data: [DONE]\n\n"
	for _, tc := range []struct {
		name      string
		anthropic bool
		stream    bool
		usage     bool
		a         answer
		want      verdict
	}{
		{"empty 200", false, false, false, answer{status: 200, header: js}, empty},
		{"whole stream", false, true, false, answer{status: 200, header: sse, body: []byte(chunk(s.want(), "stop") + done)}, served},
		{"whole stream with the usage asked for", false, true, true, answer{status: 200, header: sse,
			body: []byte(chunk(s.want(), "stop") + usageChunk + done)}, served},
		{"a usage chunk nobody asked for", false, true, false, answer{status: 200, header: sse,
			body: []byte(chunk(s.want(), "stop") + usageChunk + done)}, corrupt},
		{"no usage chunk though asked", false, true, true, answer{status: 200, header: sse, body: []byte(chunk(s.want(), "stop") + done)}, corrupt},
		{"[DONE] without a finish reason", false, true, false, answer{status: 200, header: sse, body: []byte(chunk(s.want(), "") + done)}, corrupt},
		{"wrong text", false, true, false, answer{status: 200, header: sse, body: []byte(chunk("something else", "stop") + done)}, corrupt},
		{"anthropic events without event lines", true, true, false, answer{status: 200, header: sse,
			body: []byte("data: {\"type\":\"message_stop\"}\n\n")}, corrupt},
		{"an OpenAI error to an Anthropic client", true, false, false, answer{status: 502, header: js,
			body: []byte(`{"error":{"message":"x","type":"server_error"}}`)}, malformed},
		{"an error body that is not JSON", false, false, false, answer{status: 503, header: js, body: []byte("upstream connect error")}, malformed},
		{"an error event without a message", false, true, false, answer{status: 200, header: sse,
			body: []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}\n\n")}, malformed},
		{"a stream cut inside an event", true, true, false, answer{status: 200, header: sse,
			body: []byte("event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: message_stop\ndata: {\"type\":\"mess")}, truncated},
	} {
		s.anthropic, s.stream, s.usage = tc.anthropic, tc.stream, tc.usage
		if got := classify(s, tc.a); got.verdict != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got.verdict, got.detail, tc.want)
		}
	}
}
