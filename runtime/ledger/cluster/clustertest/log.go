package clustertest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Log collects what a component logs, for a test to wait on a line.
type Log struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
}

// NewLog returns an empty log and a logger writing to it.
func NewLog() (*Log, *slog.Logger) {
	l := &Log{written: make(chan struct{})}
	return l, l.Logger()
}

// Logger is a new logger writing to l, at Info and above.
func (l *Log) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.written)
	l.written = make(chan struct{})
	return len(p), nil
}

// WaitFor fails t unless a line containing every one of parts is logged
// within d.
func (l *Log) WaitFor(t testing.TB, d time.Duration, parts ...string) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		found, written := l.has(parts), l.written
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-written:
		case <-deadline.C:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no log line with %q within %s; log:\n%s", parts, d, l.buf.String())
		}
	}
}

// String is everything logged so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *Log) has(parts []string) bool {
	for line := range strings.Lines(l.buf.String()) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
