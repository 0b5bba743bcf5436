package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// Readers of each dialect's stream, keeping what the stream tests look at,
// and clients of the fake upstreams themselves, to compare with.

// chatStream is what a client read of a chat stream.
type chatStream struct {
	chunks []string // each chunk's JSON, ids and times taken out
	// nullUsage is chunks with a "usage":null member taken out as well.
	nullUsage []string
	acc       openai.ChatCompletionAccumulator
	// usageOnly counts the chunks with no choices and a usage; lastUsage
	// is the last usage any chunk carried (the accumulator adds them up).
	usageOnly int
	lastUsage openai.CompletionUsage
	header    http.Header
	err       error
}

func readChatStream(t *testing.T, client openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) chatStream {
	t.Helper()
	var resp *http.Response
	stream := client.Chat.Completions.NewStreaming(context.Background(), p, append(opts, option.WithResponseInto(&resp))...)
	var out chatStream
	for stream.Next() {
		c := stream.Current()
		out.acc.AddChunk(c)
		out.chunks = append(out.chunks, comparableChunk(t, c.RawJSON(), false))
		out.nullUsage = append(out.nullUsage, comparableChunk(t, c.RawJSON(), true))
		if c.JSON.Usage.Valid() {
			out.lastUsage = c.Usage
			if len(c.Choices) == 0 {
				out.usageOnly++
			}
		}
	}
	out.err = stream.Err()
	if resp != nil {
		out.header = resp.Header
	}
	return out
}

// comparableChunk is a chunk's JSON without what differs between two
// answers to one request: the id and the creation time; without a null
// usage too when dropNullUsage is set.
func comparableChunk(t *testing.T, raw string, dropNullUsage bool) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("chunk %q: %v", raw, err)
	}
	delete(m, "id")
	delete(m, "created")
	if u, ok := m["usage"]; ok && u == nil && dropNullUsage {
		delete(m, "usage")
	}
	b, _ := json.Marshal(m) // map keys sorted
	return string(b)
}

// directOpenAI and directAnthropic are clients of the fake upstreams
// themselves (up-openai's and up-anthropic's), with their credentials.
func (e *env) directOpenAI() openai.Client {
	return sdkclient.OpenAI(e.policy.OpenAI, secretOpenAI)
}

func (e *env) directAnthropic() anthropic.Client {
	return sdkclient.Anthropic(e.policy.Anthropic, secretAnthropic)
}

func streamedChatParams() openai.ChatCompletionNewParams {
	return chatParams("gpt-4o-mini") // served under its own name: chunks name it alike
}

func withUsage(p openai.ChatCompletionNewParams) openai.ChatCompletionNewParams {
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	return p
}

// wantSameChunks compares two chat streams chunk by chunk.
func wantSameChunks(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d chunks, want %d as from the provider:\n got  %s\n want %s", len(got), len(want),
			strings.Join(got, "\n      "), strings.Join(want, "\n      "))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("chunk %d\n got  %s\n want %s", i, got[i], want[i])
		}
	}
}

// anthropicStream is what a client read of a messages stream: the
// message_start usage, the last message_delta usage, the accumulated
// message.
type anthropicStream struct {
	start anthropic.Usage
	delta anthropic.MessageDeltaUsage
	msg   anthropic.Message
	resp  *http.Response
	err   error
}

func readMessageStream(client anthropic.Client, p anthropic.MessageNewParams) anthropicStream {
	var out anthropicStream
	stream := client.Messages.NewStreaming(context.Background(), p, aoption.WithResponseInto(&out.resp))
	for stream.Next() {
		ev := stream.Current()
		_ = out.msg.Accumulate(ev)
		switch ev.Type {
		case "message_start":
			out.start = ev.AsMessageStart().Message.Usage
		case "message_delta":
			out.delta = ev.AsMessageDelta().Usage
		}
	}
	out.err = stream.Err()
	return out
}

func responsesParams(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
}

// responsesStream is what a client read of a Responses stream.
type responsesStream struct {
	types []string // the event types, in order
	text  string   // the output text deltas, joined
	// errMessage is the message of an error event, if one came.
	errMessage string
	completed  bool
	header     http.Header
	err        error
}

func readResponsesStream(client openai.Client, params responses.ResponseNewParams) responsesStream {
	var out responsesStream
	var resp *http.Response
	stream := client.Responses.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
	for stream.Next() {
		ev := stream.Current()
		out.types = append(out.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			out.text += ev.Delta
		case "error":
			out.errMessage = ev.Message
		case "response.completed":
			out.completed = true
		}
	}
	out.err = stream.Err()
	if resp != nil {
		out.header = resp.Header
	}
	return out
}
