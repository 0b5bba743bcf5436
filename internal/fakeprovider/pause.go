package fakeprovider

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Pause holds every stream of the handlers it wraps after its first event
// until Release. A test can then have many streams in flight at once, each
// known to have begun upstream and none able to end, and let them all run
// on together: what a gateway holds for streams in flight is then fixed
// while the test looks. Answers that are not event streams pass unchanged.
type Pause struct {
	released chan struct{}
	once     sync.Once
	held     atomic.Int64
}

// NewPause returns a Pause that holds streams until Release.
func NewPause() *Pause { return &Pause{released: make(chan struct{})} }

// Wrap serves h, typically a Server, with its streams paused.
func (p *Pause) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&pausingWriter{ResponseWriter: w, p: p, ctx: r.Context()}, r)
	})
}

// Held is how many streams are waiting for Release now.
func (p *Pause) Held() int { return int(p.held.Load()) }

// Release lets every stream, paused now or later, run on; it may be called
// more than once.
func (p *Pause) Release() { p.once.Do(func() { close(p.released) }) }

// wait holds a stream until Release or until its client goes away.
func (p *Pause) wait(ctx context.Context) error {
	p.held.Add(1)
	defer p.held.Add(-1)
	select {
	case <-p.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type pausingWriter struct {
	http.ResponseWriter
	p      *Pause
	ctx    context.Context
	status bool
	stream bool
	// begun is set once the first event has been written whole.
	begun, waited bool
}

func (w *pausingWriter) WriteHeader(status int) {
	if !w.status {
		w.status = true
		w.stream = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *pausingWriter) Write(b []byte) (int, error) {
	if !w.status {
		w.WriteHeader(http.StatusOK)
	}
	if !w.stream || w.waited {
		return w.ResponseWriter.Write(b)
	}
	if w.begun {
		w.waited = true
		if err := w.p.wait(w.ctx); err != nil {
			return 0, err
		}
		return w.ResponseWriter.Write(b)
	}
	// The first event, and whatever follows its end in the same write,
	// goes out now; the stream waits before its next write.
	w.begun = bytes.Contains(b, []byte("\n\n"))
	return w.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController.Flush calls.
func (w *pausingWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (the CutAfter
// fault hijacks it).
func (w *pausingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
