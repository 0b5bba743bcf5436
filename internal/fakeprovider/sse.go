package fakeprovider

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

var bufferPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 4096)
	return &b
}}

func getBuffer() *[]byte { return bufferPool.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	// Very large buffers (big embeddings) are left to the GC rather than
	// pinned in the pool.
	if cap(*b) <= 1<<20 {
		bufferPool.Put(b)
	}
}

// writeBody writes a complete JSON response.
func (x *exchange) writeBody(status int, b []byte) {
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	x.w.WriteHeader(status)
	if status/100 == 2 && x.r.Method == http.MethodPost && x.active.breakFor(false) == BreakHalfBody {
		x.writeHalf(b)
		return
	}
	_, _ = x.w.Write(b)
}

// errStreamEnded stops a stream early: the client went away, or the fault
// knobs cut the connection or ended the stream.
var errStreamEnded = errors.New("fakeprovider: stream ended early")

// stream writes server-sent events, one flush per event, applying the chunk
// delay and the mid-stream cut. It reuses one buffer for every event, so the
// event loop does not allocate.
type stream struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	ctx    context.Context
	buf    *[]byte
	faults Faults
	timer  *time.Timer
	sent   int
	// brk is the break this stream suffers; errShape and requestID are
	// what its error event is written with. content is set once a content
	// delta went out, ended once a break ended the stream.
	brk       Break
	errShape  streamErrorShape
	requestID string
	content   bool
	ended     bool
}

// startStream commits a 200 text/event-stream response.
func (x *exchange) startStream() *stream {
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	st := &stream{
		w:      x.w,
		rc:     http.NewResponseController(x.w),
		ctx:    x.r.Context(),
		buf:    getBuffer(),
		faults: x.faults,

		brk:       x.active.breakFor(true),
		errShape:  x.streamErrorShape(),
		requestID: x.requestID,
	}
	_ = st.rc.Flush()
	return st
}

// begin starts an event in the stream's buffer: "event: name\n" when name is
// set (Anthropic, Responses), then "data: ". The caller appends the payload
// and hands the result to send.
func (st *stream) begin(name string) []byte {
	b := (*st.buf)[:0]
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	return append(b, "data: "...)
}

// send finishes and writes one event, unless the stream's break replaces
// it with an error event.
func (st *stream) send(b []byte) error {
	switch {
	case st.ended:
		return errStreamEnded
	case st.brk == BreakOpeningError && st.sent == 0, st.brk == BreakMidError && st.content:
		st.ended = true
		_ = st.write(st.appendError())
		return errStreamEnded
	}
	return st.write(b)
}

// sendContent sends an event carrying a content delta.
func (st *stream) sendContent(b []byte) error { return st.sendKind(b, true) }

// sendKind sends an event, carrying a content delta when content is set.
func (st *stream) sendKind(b []byte, content bool) error {
	err := st.send(b)
	if err == nil && content {
		st.content = true
	}
	return err
}

// sendTerminal sends the stream's terminal event, which BreakNoTerminal
// leaves out: the stream then ends as if complete.
func (st *stream) sendTerminal(b []byte) error {
	if st.brk == BreakNoTerminal {
		st.ended = true
		return errStreamEnded
	}
	return st.send(b)
}

// write finishes and writes one event.
func (st *stream) write(b []byte) error {
	b = append(b, '\n', '\n')
	*st.buf = b
	if st.sent > 0 && st.faults.ChunkDelay > 0 && !st.sleep(st.faults.ChunkDelay) {
		return errStreamEnded
	}
	if _, err := st.w.Write(b); err != nil {
		return errStreamEnded
	}
	if err := st.rc.Flush(); err != nil {
		return errStreamEnded
	}
	st.sent++
	if st.faults.CutAfter > 0 && st.sent >= st.faults.CutAfter {
		st.cut()
		return errStreamEnded
	}
	return nil
}

// cut drops the connection so the client sees a truncated stream: no
// terminating chunk, no final events.
func (st *stream) cut() { dropConnection(st.rc) }

// dropConnection closes the connection under a response after flushing
// what was written.
func dropConnection(rc *http.ResponseController) {
	conn, rw, err := rc.Hijack()
	if err != nil {
		// HTTP/2 cannot be hijacked; aborting the handler resets the stream.
		panic(http.ErrAbortHandler)
	}
	_ = rw.Flush()
	_ = conn.Close()
}

func (st *stream) sleep(d time.Duration) bool {
	if st.timer == nil {
		st.timer = time.NewTimer(d)
	} else {
		st.timer.Reset(d)
	}
	select {
	case <-st.timer.C:
		return true
	case <-st.ctx.Done():
		return false
	}
}

func (st *stream) close() {
	if st.timer != nil {
		st.timer.Stop()
	}
	putBuffer(st.buf)
}

// sleepCtx waits d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
