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
	_, _ = x.w.Write(b)
}

// errStreamEnded stops a stream early: the client went away, or the fault
// knobs cut the connection.
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

// send finishes and writes one event.
func (st *stream) send(b []byte) error {
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
func (st *stream) cut() {
	conn, rw, err := st.rc.Hijack()
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
