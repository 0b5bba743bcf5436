package sdktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// TestGoldenStreamsAccumulate replays every golden stream output through the
// SDK's own accumulator, so each want.sse is known to be a stream a real
// client assembles without complaint, not only well-formed SSE.
func TestGoldenStreamsAccumulate(t *testing.T) {
	for _, c := range []struct {
		pair          string
		newAccumulate func() func(data []byte) error
	}{
		{"openai_anthropic", openAIAccumulator},
		{"anthropic_openai", anthropicAccumulator},
	} {
		wants, _ := filepath.Glob(filepath.Join("..", "testdata", c.pair, "stream", "*", "want.sse"))
		if len(wants) == 0 {
			t.Fatalf("no %s stream goldens", c.pair)
		}
		for _, want := range wants {
			t.Run(c.pair+"/"+filepath.Base(filepath.Dir(want)), func(t *testing.T) {
				out, err := os.ReadFile(want)
				if err != nil {
					t.Fatal(err)
				}
				accumulate := c.newAccumulate()
				for _, data := range dataLines(out) {
					if err := accumulate(data); err != nil {
						t.Fatalf("%v: %s", err, data)
					}
				}
			})
		}
	}
}

// openAIAccumulator feeds chunks to a ChatCompletionAccumulator, skipping
// [DONE] and error frames, which the SDK's stream turns into an end or an
// error before any accumulator sees them.
func openAIAccumulator() func([]byte) error {
	var acc openai.ChatCompletionAccumulator
	return func(data []byte) error {
		if string(data) == "[DONE]" || bytes.HasPrefix(data, []byte(`{"error"`)) {
			return nil
		}
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal(data, &chunk); err != nil {
			return err
		}
		if !acc.AddChunk(chunk) {
			return errRejected
		}
		return nil
	}
}

// anthropicAccumulator feeds events to Message.Accumulate; error events are
// raised by the SDK's stream before accumulation.
func anthropicAccumulator() func([]byte) error {
	var msg anthropic.Message
	return func(data []byte) error {
		var ev anthropic.MessageStreamEventUnion
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		if ev.Type == "error" {
			return nil
		}
		return msg.Accumulate(ev)
	}
}

var errRejected = errors.New("the accumulator rejected the chunk")

func dataLines(out []byte) [][]byte {
	var data [][]byte
	for _, line := range bytes.Split(out, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = append(data, d)
		}
	}
	return data
}
