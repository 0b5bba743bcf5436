package meter

import (
	"strconv"
	"strings"
	"testing"
)

// The streams and answers the benchmarks and the allocation test read:
// recorded shapes, repeated to size.

// chatStream is an include_usage chat stream of about size bytes of event
// data, as runtime/sse hands it over: text chunks, the finish chunk, the
// usage-only chunk and [DONE].
func chatStream(size int) [][]byte {
	evs := [][]byte{[]byte(chunkRole + `,"usage":null}`)}
	for n := 0; n < size; {
		ev := []byte(chunkHead + `"choices":[{"index":0,"delta":{"content":"a \"quoted\" wörd\n"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"k3Jx"}`)
		evs = append(evs, ev)
		n += len(ev)
	}
	return append(evs, []byte(chunkStop+`,"usage":null}`), []byte(chunkNone+","+chatUsage+"}"), []byte("[DONE]"))
}

// messagesStream is an Anthropic stream of about size bytes of event data.
func messagesStream(size int) [][]byte {
	evs := [][]byte{[]byte(msgStart), []byte(msgBlock)}
	for n := 0; n < size; {
		ev := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a \"quoted\" wörd\n"}}`)
		if len(evs)%50 == 0 {
			ev = []byte(msgPing)
		}
		evs = append(evs, ev)
		n += len(ev)
	}
	return append(evs, []byte(`{"type":"content_block_stop","index":0}`), []byte(delta(`"output_tokens":4000`)), []byte(msgStop))
}

// responsesStream is a short Responses stream ending in response.completed.
func responsesStream() [][]byte {
	return [][]byte{[]byte(respEvent("response.created", `"usage":null`)),
		[]byte(`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","logprobs":[]}`),
		[]byte(respEvent("response.completed", respUsage))}
}

// bigChatAnswer is a chat answer of about size bytes, most of it text.
func bigChatAnswer(size int) []byte {
	text := strings.Repeat(`a naïve \"quoted\" phrase, tabs\tand newlines\n in prose `, size/56)
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1764000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":262144,"total_tokens":262153}}`)
}

// bigEmbeddingsAnswer is an embeddings answer of about size bytes: float
// vectors, which is number scanning rather than string scanning.
func bigEmbeddingsAnswer(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"object":"list","model":"text-embedding-3-small","data":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":` + strconv.Itoa(i) + `,"embedding":[`)
		for j := range 1536 {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64(j%97)*-0.00123456789+0.0456, 'g', 9, 64))
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`],"usage":{"prompt_tokens":8,"total_tokens":8}}`)
	return []byte(b.String())
}

func TestNoAllocationsOnceWarm(t *testing.T) {
	var m StreamMeter
	for _, c := range []struct {
		shape  Shape
		events [][]byte
	}{
		{ShapeChat, chatStream(8 << 10)},
		{ShapeChat, [][]byte{[]byte(gemini("x", 7, 1)), []byte(chunkNone + `,"citations":[]}`), []byte(`{"usage":`), []byte("not json")}},
		{ShapeMessages, messagesStream(8 << 10)},
		{ShapeResponses, responsesStream()},
	} {
		allocs := testing.AllocsPerRun(50, func() {
			m.Reset(c.shape)
			for _, ev := range c.events {
				m.Event(ev)
			}
			if !m.Usage().Reported {
				t.Fatal("no usage read")
			}
		})
		if allocs != 0 {
			t.Errorf("shape %d: a stream allocates %v times", c.shape, allocs)
		}
	}
	for _, c := range []struct {
		shape Shape
		body  []byte
	}{
		{ShapeChat, bigChatAnswer(64 << 10)},
		{ShapeChat, bigEmbeddingsAnswer(64 << 10)},
		{ShapeMessages, []byte(messagesAnswer)},
		{ShapeResponses, []byte(responsesAnswer)},
	} {
		allocs := testing.AllocsPerRun(20, func() {
			if u, err := ReadAnswer(c.shape, c.body); err != nil || !u.Reported {
				t.Fatal(u, err)
			}
		})
		if allocs != 0 {
			t.Errorf("ReadAnswer allocates %v times on %.40q", allocs, c.body)
		}
	}
}

func BenchmarkStreamMeter(b *testing.B) {
	for _, c := range []struct {
		name   string
		shape  Shape
		events [][]byte
	}{{"chat", ShapeChat, chatStream(64 << 10)}, {"messages", ShapeMessages, messagesStream(64 << 10)}} {
		size := 0
		for _, ev := range c.events {
			size += len(ev)
		}
		b.Run(c.name, func(b *testing.B) {
			var m StreamMeter
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				m.Reset(c.shape)
				for _, ev := range c.events {
					m.Event(ev)
				}
			}
			b.ReportMetric(float64(len(c.events)), "events/op")
		})
	}
}

func BenchmarkReadAnswer(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"chat", bigChatAnswer(1 << 20)}, {"embeddings", bigEmbeddingsAnswer(1 << 20)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadAnswer(ShapeChat, c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
