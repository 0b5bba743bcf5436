package fakeprovider_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// discard is a ResponseWriter that flushes into nothing, so the benchmarks
// measure the handler alone.
type discard struct {
	h     http.Header
	bytes int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}
func (d *discard) Write(b []byte) (int, error) { d.bytes += len(b); return len(b), nil }

func benchmarkHandler(b *testing.B, dialect fakeprovider.Dialect, path string, header http.Header, body string) {
	s, err := fakeprovider.New(fakeprovider.Options{Dialect: dialect, RecordLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		r, _ := http.NewRequest("POST", "http://fake"+path, strings.NewReader(body))
		r.Header = header
		s.ServeHTTP(w, r)
	}
	b.SetBytes(int64(w.bytes / b.N))
}

// The choices variants multiply the stream's chunks; equal allocs/op across
// them show that chunks are written without allocating.
func BenchmarkChatStream(b *testing.B) {
	header := http.Header{"Authorization": {"Bearer k"}}
	for _, n := range []int{1, 4} {
		body := fmt.Sprintf(`{"model":"gpt-4o-mini","stream":true,"n":%d,"stream_options":{"include_usage":true},`+
			`"messages":[{"role":"user","content":"one two three four five six"}]}`, n)
		b.Run(fmt.Sprintf("choices=%d", n), func(b *testing.B) {
			benchmarkHandler(b, fakeprovider.DialectOpenAI, "/v1/chat/completions", header, body)
		})
	}
}

func BenchmarkChatJSON(b *testing.B) {
	benchmarkHandler(b, fakeprovider.DialectOpenAI, "/v1/chat/completions", http.Header{"Authorization": {"Bearer k"}},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"one two three four five six"}]}`)
}

func BenchmarkMessagesStream(b *testing.B) {
	header := http.Header{"X-Api-Key": {"k"}, "Anthropic-Version": {"2023-06-01"}}
	for _, words := range []string{"one", "one two three four five six"} {
		body := `{"model":"claude-haiku-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"` + words + `"}]}`
		b.Run(fmt.Sprintf("words=%d", len(strings.Fields(words))), func(b *testing.B) {
			benchmarkHandler(b, fakeprovider.DialectAnthropic, "/v1/messages", header, body)
		})
	}
}
