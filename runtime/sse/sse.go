// Package sse reads server-sent event streams as they arrive: it splits
// bytes cut at arbitrary boundaries into events and hands each event's data
// to a handler, reusing its buffers for the life of the stream. The
// translators and the meter both read upstream streams through it, so
// every reader of a stream agrees on where its events begin and end.
package sse

import (
	"bytes"
	"errors"
)

// MaxEventBytes bounds one event, so an upstream that never ends a line
// cannot grow a reader's memory without limit.
const MaxEventBytes = 8 << 20

// ErrEventTooLarge is returned for an event longer than MaxEventBytes.
var ErrEventTooLarge = errors.New("upstream SSE event exceeds 8 MiB")

// Handler receives each complete event's data.
type Handler interface {
	Event(data []byte) error
}

// Reader splits a stream into events across arbitrary chunk boundaries.
// Only data lines are kept: Anthropic repeats the event name as data.type,
// OpenAI sends no names, and ids, retry hints and comments carry nothing a
// reader of these streams needs. The zero value is ready to use.
type Reader struct {
	line    []byte // a line cut by a chunk boundary
	data    []byte // the data lines of the event being read, joined by \n
	hasData bool
	end     int // see EventEnd
}

// EventEnd is, while a handler called by Feed runs, the offset in Feed's p
// just past the blank line that ended the event: a relay that drops or
// keeps whole events cuts there. During Finish it is -1.
func (r *Reader) EventEnd() int { return r.end }

// Reset readies r for another stream, keeping its buffers.
func (r *Reader) Reset() {
	r.line, r.data, r.hasData, r.end = r.line[:0], r.data[:0], false, 0
}

// Feed consumes p, calling h for every event it completes; the data
// handed to h is valid only until the call returns.
func (r *Reader) Feed(p []byte, h Handler) error {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(r.line)+len(p) > MaxEventBytes {
				return ErrEventTooLarge
			}
			r.line = append(r.line, p...)
			return nil
		}
		line := p[:i]
		if len(r.line) > 0 {
			r.line = append(r.line, line...)
			line = r.line
		}
		p = p[i+1:]
		r.end = n - len(p)
		err := r.processLine(line, h)
		r.line = r.line[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// Finish is called at the end of the stream: an event the upstream left
// without its closing blank line is delivered rather than lost.
func (r *Reader) Finish(h Handler) error {
	r.end = -1
	if len(r.line) > 0 {
		err := r.processLine(r.line, h)
		r.line = r.line[:0]
		if err != nil {
			return err
		}
	}
	return r.processLine(nil, h)
}

func (r *Reader) processLine(line []byte, h Handler) error {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 {
		if !r.hasData {
			return nil
		}
		r.hasData = false
		err := h.Event(r.data)
		r.data = r.data[:0]
		return err
	}
	value, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil // event names, ids, retry and comments carry nothing needed
	}
	value = bytes.TrimPrefix(value, []byte{' '})
	if len(r.data)+len(value) > MaxEventBytes {
		return ErrEventTooLarge
	}
	if r.hasData {
		r.data = append(r.data, '\n')
	}
	r.data = append(r.data, value...)
	r.hasData = true
	return nil
}
