package extproc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"

	"github.com/pistra/pistra/internal/testkit/fakepicker"
	"github.com/pistra/pistra/runtime/pool/extproc"
)

// TestPickOneMember: the picker reads the headers (lower-cased, the
// request id among them) and the whole body, sent before any answer in
// the full-duplex mode the first message declares, and names one member;
// replaying the body unchanged is no rewrite.
func TestPickOneMember(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
		return fakepicker.Pick("127.0.0.2:8000")
	}})
	q := query(0)
	a := pick(t, c, q)
	equalList(t, "endpoints", a.Endpoints, []string{"127.0.0.2:8000"})
	if a.Body != nil || a.Model() != "" {
		t.Errorf("an unchanged replay is a change: body %q, model %q", a.Body, a.Model())
	}
	a.Done()
	got := p.WaitEnded(t, 1)[0]
	equalList(t, "x-request-id", got.Header["x-request-id"], []string{"req-1"})
	equalList(t, "content-type", got.Header["content-type"], []string{"application/json"})
	if !bytes.Equal(got.Body, q.Body) {
		t.Errorf("picker read body %q, want %q", got.Body, q.Body)
	}
	equal(t, "body chunks", got.BodyChunks, 1)
	equal(t, "body before any answer", got.BodyBeforeAnswer, true)
	if got.Config == nil {
		t.Fatal("no protocol config on the first message")
	}
	equal(t, "request body mode", got.Config.GetRequestBodyMode(), filterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
	equal(t, "response body mode", got.Config.GetResponseBodyMode(), filterv3.ProcessingMode_FULL_DUPLEX_STREAMED)
	equal(t, "body without waiting", got.Config.GetSendBodyWithoutWaitingForHeaderResponse(), true)
	equal(t, "protocol config on a later message", got.LateConfig, false)
	equal(t, "subset hint", got.SubsetKind, "")
}

// TestPickCommaList: a comma list is the ordered list of endpoints, each
// written canonically (IPv6 in brackets, zeros compressed).
func TestPickCommaList(t *testing.T) {
	_, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
		return fakepicker.Pick("127.0.0.3:8000", " [0:0::1]:9000", "127.0.0.2:8000")
	}})
	a := pick(t, c, query(0))
	equalList(t, "endpoints", a.Endpoints, []string{"127.0.0.3:8000", "[::1]:9000", "127.0.0.2:8000"})
}

// TestPickHeaderOrMetadata: the pick is read from the header mutation
// alone, from the dynamic metadata alone, and refused when the two name
// different lists or neither names any.
func TestPickHeaderOrMetadata(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply fakepicker.Reply
		want  []string
	}{
		{"header", fakepicker.Reply{Header: "127.0.0.2:8000,127.0.0.3:8000"}, []string{"127.0.0.2:8000", "127.0.0.3:8000"}},
		{"metadata", fakepicker.Reply{Metadata: "127.0.0.4:8000"}, []string{"127.0.0.4:8000"}},
		{"both, spelt apart", fakepicker.Reply{Header: "[::1]:80", Metadata: "[0::1]:80"}, []string{"[::1]:80"}},
		{"malformed entries kept", fakepicker.Reply{Header: "pod-a:8000, 127.0.0.2:8000,,"}, []string{"pod-a:8000", "127.0.0.2:8000"}},
		{"disagreeing", fakepicker.Reply{Header: "127.0.0.2:8000", Metadata: "127.0.0.3:8000"}, nil},
		{"nothing", fakepicker.Reply{}, nil},
		{"only commas", fakepicker.Reply{Header: " , ", Metadata: ","}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply { return tc.reply }})
			a, err := c.Pick(t.Context(), query(0))
			if tc.want == nil {
				if !errors.Is(err, extproc.ErrProtocol) {
					t.Fatalf("err = %v, want ErrProtocol", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.Done()
			equalList(t, "endpoints", a.Endpoints, tc.want)
		})
	}
}

// TestPickFromHeader: a test steers the fake picker with a request
// header, as the conformance suite does.
func TestPickFromHeader(t *testing.T) {
	_, c := startPlain(t, fakepicker.Options{Script: fakepicker.FromHeader("Test-Epp-Endpoint-Selection",
		fakepicker.RoundRobin("127.0.0.9:8000"))})
	q := query(0)
	equalList(t, "without the header", pick(t, c, q).Endpoints, []string{"127.0.0.9:8000"})
	q.Header.Set("Test-Epp-Endpoint-Selection", "127.0.0.3:8000,127.0.0.2:8000")
	equalList(t, "with the header", pick(t, c, q).Endpoints, []string{"127.0.0.3:8000", "127.0.0.2:8000"})
}

// TestBodyRewriteFull: a full picker's model rewrite, a re-marshal of the
// whole body replayed in chunks, is taken whole, and its model read; the
// body goes to the picker in more than one chunk.
func TestBodyRewriteFull(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
		r := fakepicker.Pick("127.0.0.2:8000")
		r.Model = "llama-big"
		return r
	}})
	q := query(200 << 10)
	a := pick(t, c, q)
	var m map[string]any
	if err := json.Unmarshal(q.Body, &m); err != nil {
		t.Fatal(err)
	}
	m["model"] = "llama-big"
	want, _ := json.Marshal(m)
	if !bytes.Equal(a.Body, want) {
		t.Errorf("body: %d bytes, want the %d of the re-marshal", len(a.Body), len(want))
	}
	equal(t, "model", a.Model(), "llama-big")
	a.Done()
	got := p.WaitEnded(t, 1)[0]
	equal(t, "body chunks", got.BodyChunks, 4)
	if !bytes.Equal(got.Body, q.Body) {
		t.Errorf("picker read %d bytes, want %d", len(got.Body), len(q.Body))
	}
}

// TestBodyLight: a light picker answers each chunk with an empty body
// answer (and the last after the header answer): the body is unchanged.
func TestBodyLight(t *testing.T) {
	for _, size := range []int{100, 200 << 10} {
		p, c := startPlain(t, fakepicker.Options{Light: true, Script: func(fakepicker.Request) fakepicker.Reply {
			r := fakepicker.Pick("127.0.0.2:8000")
			r.Model = "ignored"
			return r
		}})
		q := query(size)
		a := pick(t, c, q)
		equalList(t, "endpoints", a.Endpoints, []string{"127.0.0.2:8000"})
		if a.Body != nil || a.Model() != "" {
			t.Errorf("size %d: light picker changed the body: %d bytes, model %q", size, len(a.Body), a.Model())
		}
		a.Done()
		equal(t, "body chunks", p.WaitEnded(t, 1)[0].BodyChunks, (len(q.Body)+64<<10-1)/(64<<10))
	}
}

// TestRequestWithoutBody: a request without a body ends the stream on its
// headers, and the picker answers them at once.
func TestRequestWithoutBody(t *testing.T) {
	for _, light := range []bool{false, true} {
		p, c := startPlain(t, fakepicker.Options{Light: light, Script: func(fakepicker.Request) fakepicker.Reply {
			return fakepicker.Pick("127.0.0.5:8000")
		}})
		q := query(0)
		q.Body = nil
		a := pick(t, c, q)
		equalList(t, "endpoints", a.Endpoints, []string{"127.0.0.5:8000"})
		a.Done()
		got := p.WaitEnded(t, 1)[0]
		equal(t, "body chunks", got.BodyChunks, 0)
		equal(t, "body", string(got.Body), "")
	}
}

// TestSubsetHint: the subset goes as a list under the hint's key; a
// picker honouring it picks only in it, and answers an empty one 503.
func TestSubsetHint(t *testing.T) {
	members := []string{"127.0.0.2:8000", "127.0.0.3:8000", "127.0.0.4:8000"}
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin(members...)})
	q := query(0)
	q.Subset = []string{"127.0.0.3:8000", "[::1]:8000"}
	for range 3 {
		a := pick(t, c, q)
		equalList(t, "endpoints", a.Endpoints, []string{"127.0.0.3:8000"})
		a.Done()
	}
	got := p.WaitEnded(t, 3)[0]
	equal(t, "hint kind", got.SubsetKind, "list")
	equalList(t, "hint", got.Subset, q.Subset)

	q.Subset = []string{}
	_, err := c.Pick(t.Context(), q)
	var ie *extproc.ImmediateError
	if !errors.As(err, &ie) || ie.Status != 503 {
		t.Fatalf("empty subset: err = %v, want a 503 ImmediateError", err)
	}
	got = p.WaitEnded(t, 4)[3]
	equal(t, "empty hint kind", got.SubsetKind, "list")
	equal(t, "empty hint length", len(got.Subset), 0)
}

// TestBodyReplacementRefused: a replacement body that is not JSON, names
// no model, or is far larger than any rewrite is a protocol error.
func TestBodyReplacementRefused(t *testing.T) {
	q := query(1000)
	for name, body := range map[string][]byte{
		"not JSON":  []byte("model=llama"),
		"no model":  []byte(`{"messages":[]}`),
		"too large": bytes.Repeat([]byte(" "), 7*len(q.Body)+64<<10),
	} {
		_, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
			r := fakepicker.Pick("127.0.0.2:8000")
			r.Body = body
			return r
		}})
		if _, err := c.Pick(t.Context(), q); !errors.Is(err, extproc.ErrProtocol) {
			t.Errorf("%s: err = %v, want ErrProtocol", name, err)
		}
	}
}
