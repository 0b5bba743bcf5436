package translate

import (
	"fmt"
	"io"

	"github.com/pistra/pistra/runtime/sse"
)

// streamState is where a stream translator is in its message.
type streamState uint8

const (
	awaitingStart streamState = iota // nothing translated yet
	streaming                        // the message is open
	finishing                        // the stop reason is known; final frames owed
	done                             // ended (final or upstream error frames, or failed); input ignored
)

// streamCore is what both stream translators share: the upstream SSE
// reader, the client frames not yet written, where the message is, and how
// a stream ends. A pair embeds it and supplies its own events and final
// frames through pairFrames. A stream that cannot end whole writes no error
// frame of its own: it says why, and the relay tells the client (one event
// for translated and passthrough streams alike).
type streamCore struct {
	w      io.Writer
	sse    sse.Reader
	out    []byte
	state  streamState
	frames pairFrames
	// upstreamErr is the error event the upstream sent, once relayed.
	upstreamErr error
}

// UpstreamError is the error the upstream reported in its stream (relayed
// to the client as its dialect's error event), or nil.
func (c *streamCore) UpstreamError() error { return c.upstreamErr }

// reportUpstream records an upstream error event the pair relayed.
func (c *streamCore) reportUpstream(errType, message string) {
	c.upstreamErr = fmt.Errorf("%w: %s: %s", ErrUpstreamReported, errType, message)
}

// pairFrames is what a pair adds to streamCore.
type pairFrames interface {
	sse.Handler
	// appendFinal writes the frames that end a finished message.
	appendFinal()
}

// Write feeds upstream bytes to the pair and writes what they translate to,
// once per call, so the caller can flush after every Write.
func (c *streamCore) Write(p []byte) (int, error) {
	if c.state == done {
		return len(p), nil
	}
	if err := c.sse.Feed(p, c.frames); err != nil {
		return len(p), c.fail(err)
	}
	return len(p), c.flush()
}

// Close ends the client stream: the final frames when the message
// finished, else ErrIncompleteStream, with nothing written.
func (c *streamCore) Close() error {
	if c.state != done {
		// A last event cut off mid-JSON is what an early end looks like, so
		// it is not reported as malformed: the state decides below.
		_ = c.sse.Finish(c.frames)
	}
	switch c.state {
	case done:
		return nil
	case finishing:
		c.frames.appendFinal()
		return c.flush()
	}
	c.state = done
	if err := c.flush(); err != nil {
		return err
	}
	return ErrIncompleteStream
}

// fail ends the stream at a malformed upstream event, after the frames
// translated before it.
func (c *streamCore) fail(cause error) error {
	if c.state == done {
		return c.flush() // the stream already ended; trailing bytes do not matter
	}
	c.state = done
	if err := c.flush(); err != nil {
		return err
	}
	return fmt.Errorf("%w: %v", ErrUpstreamEvent, cause)
}

func (c *streamCore) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.w.Write(c.out)
	c.out = c.out[:0]
	return err
}
