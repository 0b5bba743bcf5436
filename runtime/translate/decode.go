package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

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
