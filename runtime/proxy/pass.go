package proxy

import "io"

// Passed is how the relay of an answer passed as it is ended: the first
// client write that failed (the client left), the first upstream read
// that failed (a clean end is none).
type Passed struct{ Wrote, Read error }

// Pass relays an answer the gateway passes as it is, an agent's or a
// tool server's: head (what the caller already read of it), then body
// read by read as it arrives, through the one pump and its pooled
// buffers, each write flushed when flush is set. The caller decides what
// the ending means for its protocol.
func Pass(w io.Writer, flush bool, head []byte, body io.Reader) Passed {
	src := passSource{head: head}
	e := pump(w, flush, &src, body)
	return Passed{Wrote: e.wrote, Read: e.read}
}
