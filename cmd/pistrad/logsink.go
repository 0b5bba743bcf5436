package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logSink buffers log lines and writes them out every interval (or when
// the buffer fills), so a request's log line costs a copy rather than a
// write system call on the request path. Lines are whole: slog hands each
// record over in one Write. Close flushes what is left.
type logSink struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newLogSink(w io.Writer, interval time.Duration) *logSink {
	s := &logSink{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go s.flushEvery(interval)
	return s
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *logSink) flushEvery(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.flush()
		case <-s.stop:
			s.flush()
			return
		}
	}
}

func (s *logSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.w.Flush() // nowhere left to report a failing log destination
}

// Close stops the flusher and writes out the buffer.
func (s *logSink) Close() {
	close(s.stop)
	<-s.done
}
