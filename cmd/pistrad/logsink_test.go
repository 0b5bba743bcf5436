package main

import (
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
)

func TestLogSinkBuffersThenFlushes(t *testing.T) {
	var out testkit.SyncBuffer
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
