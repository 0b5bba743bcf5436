package proxy

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/meter"
)

// strided hands out b in reads of at most n bytes, as an upstream might.
type strided struct {
	b []byte
	n int
}

func (s *strided) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), s.n)], s.b)
	s.b = s.b[k:]
	return k, nil
}

// FuzzStreamRelay feeds arbitrary upstream bytes, cut anywhere, through
// the stream relay as the proxy does (the start held and checked, then the
// rest pumped). Without stripping, the client gets exactly the upstream's
// bytes; with it, never more, and exactly them when nothing mentions usage.
func FuzzStreamRelay(f *testing.F) {
	f.Add([]byte(strings.Join(oaiChunks, "")), uint8(7), true)
	f.Add([]byte(strings.Join(antEvents, "")), uint8(3), false)
	f.Add([]byte(": ping\n\ndata: {\"usage\":null,\"choices\":[]}\r\n\r\ndata: [DONE]"), uint8(1), true)
	f.Fuzz(func(t *testing.T, in []byte, stride uint8, strip bool) {
		s := getStream(meter.ShapeChat, strip)
		defer putStream(s)
		body := &strided{b: in, n: int(stride%64) + 1}
		if _, err := s.readFirst(body); err != nil {
			return // nothing would be relayed
		}
		var got bytes.Buffer
		if e := pumped(&got, false, s, body); e.broken != nil && !e.short {
			t.Fatalf("pump: %v", e.broken)
		}
		switch {
		case !strip && !bytes.Equal(got.Bytes(), in):
			t.Fatalf("relayed\n%q\nof\n%q", got.Bytes(), in)
		case got.Len() > len(in):
			t.Fatalf("relayed %d bytes of %d", got.Len(), len(in))
		case strip && !bytes.Contains(in, []byte("usage")) && !bytes.Equal(got.Bytes(), in):
			t.Fatalf("stripped an event without usage:\n%q\nof\n%q", got.Bytes(), in)
		}
	})
}
