package proxy

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// parts hands out its parts one read each, then err (io.EOF when nil).
type parts struct {
	parts []string
	err   error
	reads int
}

func (p *parts) Read(b []byte) (int, error) {
	p.reads++
	if len(p.parts) == 0 {
		return 0, cmp.Or(p.err, io.EOF)
	}
	n := copy(b, p.parts[0])
	p.parts = p.parts[1:]
	return n, nil
}

// failingWriter fails every write.
type failingWriter struct{ writes int }

func (w *failingWriter) Write([]byte) (int, error) { w.writes++; return 0, errors.New("broken pipe") }

// TestPumpFacts: what the pump reports of each way a copy stops, for the
// ending to decide from, and what the client got meanwhile, for each
// kind of source: bytes passed as they are, a metered stream, a
// translated one.
func TestPumpFacts(t *testing.T) {
	reset := errors.New("connection reset")
	chat := strings.Join(oaiChunks, "")
	stream := func() source { return getStream(meter.ShapeChat, false) }
	xlat := func() source {
		s := &xlatSource{}
		s.s = translate.For(plan.TranslateOpenAIAnthropic).Stream(s, "m", false)
		return s
	}
	pass := func(head string) func() source { return func() source { return &passSource{head: []byte(head)} } }
	tests := []struct {
		name   string
		src    func() source
		body   *parts // nil: nothing left to read
		broken error  // nil: whole
		read   bool   // a read failed
		short  bool
		want   string // what the client got; "" when it is all the body
		absent string // what the client must not get from the pump
	}{
		{name: "held whole", src: pass(`{"id":1}`), want: `{"id":1}`},
		{name: "held start, then the rest", src: pass("ab"), body: &parts{parts: []string{"cd", "ef"}}, want: "abcdef"},
		{name: "passed body breaks", src: pass(""), body: &parts{parts: []string{"ab"}, err: reset}, broken: reset, read: true},
		{name: "stream whole", src: stream, body: &parts{parts: oaiChunks}},
		{name: "stream without its terminal event", src: stream, body: &parts{parts: oaiChunks[:4]}, broken: errNoTerminal, short: true},
		{name: "stream breaks", src: stream, body: &parts{parts: oaiChunks[:2], err: reset}, broken: reset, read: true},
		{name: "translated whole", src: xlat, body: &parts{parts: antEvents}, want: "data: [DONE]"},
		// The error event of a broken translated stream is the ending's to
		// write, as for a passthrough one: the translator writes none.
		{name: "translated short", src: xlat, body: &parts{parts: antEvents[:4]}, broken: translate.ErrIncompleteStream, short: true,
			want: `"content":"Hel"`, absent: `"error"`},
		{name: "translated breaks mid-message", src: xlat, body: &parts{parts: antEvents[:4], err: reset},
			broken: translate.ErrIncompleteStream, read: true, want: `"content":"Hel"`, absent: `"error"`},
		{name: "translated breaks once the message is done", src: xlat, body: &parts{parts: antEvents[:7], err: reset},
			read: true, want: "data: [DONE]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			var body io.Reader
			var all strings.Builder
			if tt.body != nil {
				body = tt.body
				for _, p := range tt.body.parts {
					all.WriteString(p)
				}
			}
			e := pumped(&got, true, tt.src(), body)
			if e.wrote != nil || (e.read != nil) != tt.read || e.short != tt.short ||
				(tt.broken == nil) != (e.broken == nil) || tt.broken != nil && !errors.Is(e.broken, tt.broken) {
				t.Fatalf("wrote %v read %v broken %v short %v; want read %v broken %v short %v",
					e.wrote, e.read, e.broken, e.short, tt.read, tt.broken, tt.short)
			}
			switch {
			case tt.want == "" && got.String() != all.String():
				t.Errorf("client got %q, want the body %q", got.String(), all.String())
			case tt.want != "" && !strings.Contains(got.String(), tt.want):
				t.Errorf("client got %q, want %q in it", got.String(), tt.want)
			}
			if tt.absent != "" && strings.Contains(got.String(), tt.absent) {
				t.Errorf("client got %q, want no %q in it", got.String(), tt.absent)
			}
		})
	}

	// A failed write stops the copy: the client is gone, and the upstream
	// is read no further.
	body := &parts{parts: []string{chat, chat}}
	w := &failingWriter{}
	if e := pumped(w, false, pass("ab")(), body); e.wrote == nil || e.broken != nil || w.writes != 1 || body.reads != 0 {
		t.Errorf("wrote %v broken %v after %d writes and %d reads", e.wrote, e.broken, w.writes, body.reads)
	}
}

// readyParts is parts that can wait for its next read, and counts both.
type readyParts struct {
	parts
	waits   int
	unready int // reads not preceded by a wait of their own
}

func (p *readyParts) WaitReady()   { p.waits++ }
func (p *readyParts) Close() error { return nil }

func (p *readyParts) Read(b []byte) (int, error) {
	if p.waits != p.reads+1 {
		p.unready++
	}
	return p.parts.Read(b)
}

// TestPumpWaitsBeforeEachRead: a body that can wait for its bytes without a
// buffer (h1's) is waited on before every read, the stream's first event
// included, so the copy buffer is taken only once there is something to
// copy; through the provider's timer too.
func TestPumpWaitsBeforeEachRead(t *testing.T) {
	body := &readyParts{parts: parts{parts: oaiChunks}}
	a := &attempt{}
	timed := a.timeBody(body)
	s := getStream(meter.ShapeChat, false)
	defer putStream(s)
	if _, err := s.readFirst(body); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if e := pumped(&got, true, s, timed); e.broken != nil || e.read != nil {
		t.Fatalf("broken %v read %v", e.broken, e.read)
	}
	if got.String() != strings.Join(oaiChunks, "") {
		t.Errorf("client got %q", got.String())
	}
	if body.unready != 0 || body.waits != body.reads {
		t.Errorf("%d waits for %d reads, %d of them not waited for", body.waits, body.reads, body.unready)
	}
}

// pumped runs pump and returns how the copy ended.
func pumped(w io.Writer, flush bool, src source, body io.Reader) ending {
	var e ending
	pump(w, flush, src, body, &e)
	return e
}
