package main

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLogSinkBuffersThenFlushes(t *testing.T) {
	var out lockedBuffer
	s := newLogSink(&out, time.Hour)
	for range 3 {
		if _, err := s.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != "" {
		t.Fatalf("written before a flush: %q", out.String())
	}
	s.Close()
	if out.String() != "line\nline\nline\n" {
		t.Fatalf("after Close: %q", out.String())
	}
}
