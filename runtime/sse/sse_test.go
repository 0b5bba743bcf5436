package sse

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// collect records every event's data, copied since the reader reuses it.
type collect struct{ events []string }

func (c *collect) Event(data []byte) error {
	c.events = append(c.events, string(data))
	return nil
}

func TestReaderSplitsEventsAtAnyBoundary(t *testing.T) {
	stream := "event: message_start\ndata: {\"a\":1}\n\n" +
		": a comment\nid: 7\nretry: 10\ndata: first line\ndata:second line\n\n" +
		"data: crlf\r\n\r\n" +
		"\n\n" + // blank lines with no data deliver nothing
		"data: [DONE]\n\n"
	want := []string{`{"a":1}`, "first line\nsecond line", "crlf", "[DONE]"}
	for stride := 1; stride <= len(stream); stride++ {
		var r Reader
		var c collect
		for p := stream; len(p) > 0; {
			n := min(stride, len(p))
			if err := r.Feed([]byte(p[:n]), &c); err != nil {
				t.Fatalf("stride %d: %v", stride, err)
			}
			p = p[n:]
		}
		if err := r.Finish(&c); err != nil {
			t.Fatalf("stride %d: finish: %v", stride, err)
		}
		if !slices.Equal(c.events, want) {
			t.Fatalf("stride %d: events %q, want %q", stride, c.events, want)
		}
	}
}

func TestFinishDeliversAnUnterminatedEvent(t *testing.T) {
	for _, tail := range []string{"data: last", "data: last\n"} {
		var r Reader
		var c collect
		if err := r.Feed([]byte("data: one\n\n"+tail), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.events) != 1 {
			t.Fatalf("%q: delivered %q before the end", tail, c.events)
		}
		if err := r.Finish(&c); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.events, []string{"one", "last"}) {
			t.Errorf("%q: events %q", tail, c.events)
		}
	}
}

// ends records, per event, EventEnd and the bytes of p up to it.
type ends struct {
	r    *Reader
	p    []byte
	cuts []string
}

func (e *ends) Event([]byte) error {
	e.cuts = append(e.cuts, string(e.p[:e.r.EventEnd()]))
	return nil
}

func TestEventEndCutsAfterTheBlankLine(t *testing.T) {
	var r Reader
	e := &ends{r: &r}
	e.p = []byte("data: a\n\ndata: b\r\n\r\ndata: c")
	if err := r.Feed(e.p, e); err != nil {
		t.Fatal(err)
	}
	want := []string{"data: a\n\n", "data: a\n\ndata: b\r\n\r\n"}
	if !slices.Equal(e.cuts, want) {
		t.Fatalf("cuts %q, want %q", e.cuts, want)
	}
	if err := r.Finish(&collect{}); err != nil || r.EventEnd() != -1 {
		t.Fatalf("Finish: %v, EventEnd %d", err, r.EventEnd())
	}
}

func TestEventTooLarge(t *testing.T) {
	var r Reader
	var c collect
	big := []byte("data: " + strings.Repeat("x", MaxEventBytes))
	if err := r.Feed(big, &c); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("unterminated line: %v, want ErrEventTooLarge", err)
	}
	r = Reader{}
	lines := strings.Repeat("data: "+strings.Repeat("y", 1<<20)+"\n", 9)
	if err := r.Feed([]byte(lines), &c); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("many data lines: %v, want ErrEventTooLarge", err)
	}
}

type failing struct{}

var errStop = errors.New("stop")

func (failing) Event([]byte) error { return errStop }

func TestHandlerErrorStopsFeed(t *testing.T) {
	var r Reader
	if err := r.Feed([]byte("data: a\n\ndata: b\n\n"), failing{}); !errors.Is(err, errStop) {
		t.Fatalf("Feed = %v, want the handler's error", err)
	}
}

func BenchmarkFeed(b *testing.B) {
	chunk := []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hello"}}]}` + "\n\n")
	var r Reader
	var h nop
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Feed(chunk, h); err != nil {
			b.Fatal(err)
		}
	}
}

type nop struct{}

func (nop) Event([]byte) error { return nil }
