package record

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// JSONHandler is slog's JSON handler with a fast way for the request line:
// LogRequest writes the line from the record itself, the same bytes slog
// would write for Attrs, without slog's per-attribute work (the record's
// attribute slice, a kind switch per value, encoding/json for the
// duration). Every other line, and loggers derived with attributes or
// groups, are slog's own.
type JSONHandler struct {
	*slog.JSONHandler
	w *lockedWriter
}

// NewJSONHandler writes JSON lines of level and above to w.
func NewJSONHandler(w io.Writer, level slog.Leveler) *JSONHandler {
	lw := &lockedWriter{w: w}
	return &JSONHandler{JSONHandler: slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: level}), w: lw}
}

// lockedWriter serialises the request lines with slog's own lines, as
// slog does for its own.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineBufs holds request lines while they are written; a buffer grown
// past maxPooledLine (a long error) is left to the collector.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledLine = 16 << 10

// LogRequest writes r's line at level, d being how long it took, as slog
// would write Logger.LogAttrs(ctx, level, "request", r.Attrs(nil, d)...).
func (h *JSONHandler) LogRequest(level slog.Level, r *Record, d time.Duration) {
	if !h.Enabled(context.Background(), level) {
		return
	}
	bp := lineBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = time.Now().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = append(b, level.String()...)
	b = append(b, `","msg":"request"`...)
	b = r.appendJSON(b, d)
	b = append(b, "}\n"...)
	_, _ = h.w.Write(b) // slog, too, has nowhere to report a failing log
	if cap(b) <= maxPooledLine {
		*bp = b
		lineBufs.Put(bp)
	}
}
