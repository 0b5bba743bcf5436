package proxy

import (
	"io"
	"net/http"
	"sync"

	"github.com/pistra/pistra/runtime/meter"
)

// A source is one answer as the pump copies it: it turns the upstream's
// reads into the bytes the client gets, reading them as they pass (the
// meter, a translator), and judges at the end whether the answer came
// whole. The bytes a method returns are the client's until its next call.
type source interface {
	// start returns the bytes owed for what inspect read before the relay
	// began.
	start() ([]byte, error)
	// next returns the bytes owed for p, one upstream read: p itself, part
	// of it, or other bytes. An error ends the answer there, broken; the
	// bytes returned with it still go.
	next(p []byte) ([]byte, error)
	// end is told the upstream body ended, after the read failure readErr
	// (nil at a clean end). It returns the bytes still owed and why the
	// answer is not whole, nil when it is.
	end(readErr error) ([]byte, error)
	// seen writes into r what the source read of the answer, asked once
	// the copy is over however it stopped.
	seen(r *seen)
}

// copyPool holds relay buffers: one per read in progress, none per chunk.
var copyPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// readyWaiter is a body that can wait for its next read to have bytes (or
// its end) without a buffer of the caller's: h1's, whose connection lends
// its own read buffer back while it waits.
type readyWaiter interface{ WaitReady() }

// readPooled reads body once into a copy buffer from the pool, which the
// caller puts back. The buffer is taken only once the read will not wait,
// when body can tell: a stream waiting on its upstream holds none.
func readPooled(body io.Reader) (*[32 << 10]byte, int, error) {
	if w, ok := body.(readyWaiter); ok {
		w.WaitReady()
	}
	buf := copyPool.Get().(*[32 << 10]byte)
	n, err := body.Read(buf[:])
	return buf, n, err
}

// pump copies an answer to the client: what src owes for the bytes read
// before, then body read by read as src turns it (each read through a
// pooled buffer held only for that read, see readPooled), then what src
// owes at the end. body is nil when inspect read all of it. Each write is flushed
// when flush is set. It stops at the first failed write: the client is
// gone, whatever the upstream does next. It reports what it saw, for the
// ending to decide from.
func pump(w io.Writer, flush bool, src source, body io.Reader, e *ending) {
	cw := newClientWriter(w, flush)
	out, err := src.start()
	if e.wrote = cw.write(out); e.wrote != nil || err != nil {
		e.broken = err
		return
	}
	for body != nil && e.read == nil {
		buf, n, rerr := readPooled(body)
		if n > 0 {
			out, err := src.next(buf[:n])
			e.wrote = cw.write(out)
			if e.wrote != nil || err != nil {
				copyPool.Put(buf)
				e.broken = err
				return
			}
		}
		copyPool.Put(buf) // out, which may be buf, is written
		if rerr == io.EOF {
			break
		}
		e.read = rerr
	}
	out, e.broken = src.end(e.read)
	e.short = e.read == nil && e.broken != nil
	e.wrote = cw.write(out)
}

// clientWriter writes an answer's bytes to the client, flushing each
// write when it has a flusher.
type clientWriter struct {
	w       io.Writer
	flusher http.Flusher
}

// newClientWriter writes to w, flushing each write when flush is set and
// w can.
func newClientWriter(w io.Writer, flush bool) clientWriter {
	c := clientWriter{w: w}
	if flush {
		c.flusher, _ = w.(http.Flusher)
	}
	return c
}

func (c clientWriter) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if _, err := c.w.Write(p); err != nil {
		return err
	}
	if c.flusher != nil {
		c.flusher.Flush()
	}
	return nil
}

// passSource is an answer whose bytes pass as they are: head (the whole
// answer when there is no body left to read), then the rest as it comes.
// A read failure breaks it; nothing else can, since nothing reads it.
type passSource struct {
	head []byte
	read seen
}

var _ source = (*passSource)(nil)

func (s *passSource) start() ([]byte, error)            { return s.head, nil }
func (s *passSource) next(p []byte) ([]byte, error)     { return p, nil }
func (s *passSource) end(readErr error) ([]byte, error) { return nil, readErr }
func (s *passSource) seen(r *seen)                      { *r = s.read }

// passthroughUsage is how an answer's usage, as the passthrough meter read
// it, is recorded: only when the answer reported one.
func passthroughUsage(u meter.Usage) seen {
	if !u.Reported {
		return seen{}
	}
	return seen{usage: u, from: meter.SourcePassthrough}
}
