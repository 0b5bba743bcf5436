package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// maxEventBytes bounds one upstream SSE event, so an upstream that never ends
// a line cannot grow a translator's memory without limit.
const maxEventBytes = 8 << 20

var errEventTooLarge = errors.New("upstream SSE event exceeds 8 MiB")

// sseHandler receives each complete upstream event.
type sseHandler interface {
	event(data []byte) error
}

// sseReader splits upstream bytes into SSE events across arbitrary chunk
// boundaries. Only data lines matter to the translators: Anthropic repeats
// the event name as data.type, and OpenAI sends no names. Its buffers are
// reused for the life of the stream.
type sseReader struct {
	line    []byte // a line cut by a chunk boundary
	data    []byte // the data lines of the event being read, joined by \n
	hasData bool
}

// feed consumes p, calling h for every event it completes.
func (r *sseReader) feed(p []byte, h sseHandler) error {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(r.line)+len(p) > maxEventBytes {
				return errEventTooLarge
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
		err := r.processLine(line, h)
		r.line = r.line[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// finish handles an upstream that ended without the blank line that closes
// its last event: the event is delivered rather than lost.
func (r *sseReader) finish(h sseHandler) error {
	if len(r.line) > 0 {
		err := r.processLine(r.line, h)
		r.line = r.line[:0]
		if err != nil {
			return err
		}
	}
	return r.processLine(nil, h)
}

func (r *sseReader) processLine(line []byte, h sseHandler) error {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 {
		if !r.hasData {
			return nil
		}
		r.hasData = false
		err := h.event(r.data)
		r.data = r.data[:0]
		return err
	}
	value, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil // event names, ids, retry and comments carry nothing needed
	}
	value = bytes.TrimPrefix(value, []byte{' '})
	if len(r.data)+len(value) > maxEventBytes {
		return errEventTooLarge
	}
	if r.hasData {
		r.data = append(r.data, '\n')
	}
	r.data = append(r.data, value...)
	r.hasData = true
	return nil
}

// eventDecoder decodes one JSON value per call with a json.Decoder kept for
// the stream's life. json.Unmarshal allocates its decoder and scanner state on
// every call; the kept decoder reuses them, so a stream event costs no
// allocation once buffers have grown. A decode error leaves the decoder
// unusable, which is fine: it ends the stream.
type eventDecoder struct {
	src bytes.Reader
	dec *json.Decoder
	fed int64 // bytes handed to the decoder so far
}

var errTrailingData = errors.New("trailing data after the JSON value")

// decode decodes data, which must hold exactly one JSON value, into v.
func (d *eventDecoder) decode(data []byte, v any) error {
	if d.dec == nil {
		d.dec = json.NewDecoder(&d.src)
	}
	d.src.Reset(data)
	d.fed += int64(len(data))
	if err := d.dec.Decode(v); err != nil {
		return err
	}
	// Whatever the decoder has not consumed is the tail of data; only
	// whitespace may remain there (the next value would otherwise start
	// with it).
	unread := d.fed - d.dec.InputOffset()
	if unread > int64(len(data)) || len(bytes.TrimSpace(data[int64(len(data))-unread:])) > 0 {
		return errTrailingData
	}
	return nil
}

// isJSONString reports whether a raw JSON value (already validated by the
// decoder) is a string, the only kind the translators copy into frames.
func isJSONString(raw []byte) bool {
	return len(raw) >= 2 && raw[0] == '"'
}

// servedModel returns the model to name in the client's stream: the one the
// upstream reported (a JSON string, copied into model's storage since
// decode buffers are reused), else model as it was.
func servedModel(model, reported []byte) []byte {
	if isEmptyJSONString(reported) {
		return model
	}
	return append(model[:0], reported...)
}

// isEmptyJSONString reports whether raw is absent, null or "".
func isEmptyJSONString(raw []byte) bool {
	return !isJSONString(raw) || len(raw) == 2
}

func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }
