package testkit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"
)

// sent is one request through an Upstream, and what its trace saw.
type sent struct {
	resp *http.Response
	err  error
	// wrote is whether WroteRequest was reported, atEnd whether the body
	// had been read to its end by then.
	wrote, atEnd bool
}

// send posts body to url through u.
func send(t *testing.T, u *Upstream, ctx context.Context, url, body string) sent {
	t.Helper()
	var s sent
	r := strings.NewReader(body)
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { s.wrote, s.atEnd = true, r.Len() == 0 }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "POST", url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test", "1")
	s.resp, s.err = u.RoundTrip(req)
	return s
}

func readAll(t *testing.T, resp *http.Response) (string, error) {
	t.Helper()
	var got strings.Builder
	buf := make([]byte, 4)
	for {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return got.String(), err
		}
	}
}

func TestUpstreamAnswersInTurnAndRecords(t *testing.T) {
	broken := errors.New("connection reset")
	u := NewUpstream(map[string][]Reply{
		"a.test": {JSON(503, `{}`, "Retry-After", "0"), {Status: 200, Parts: []string{"ab", "c"}, ReadErr: broken}},
		AnyHost:  {SSE("data: 1\n\n")},
	})
	first := send(t, u, context.Background(), "http://a.test/v1/x", "first")
	if resp := first.resp; first.err != nil || resp.StatusCode != 503 || resp.Status != "503 Service Unavailable" ||
		resp.ContentLength != 2 || resp.Header.Get("Retry-After") != "0" || !first.wrote || !first.atEnd {
		t.Fatalf("first answer %+v", first)
	}
	for range 2 { // the last reply repeats
		resp := send(t, u, context.Background(), "http://a.test/v1/x", "again").resp
		if body, err := readAll(t, resp); resp.ContentLength != -1 || body != "abc" || err != broken {
			t.Fatalf("second answer %q, %v", body, err)
		}
	}
	if body, err := readAll(t, send(t, u, context.Background(), "http://b.test/v1/y", "other").resp); body != "data: 1\n\n" || err != nil {
		t.Fatalf("any host: %q, %v", body, err)
	}
	calls := u.Calls("a.test")
	if u.Count() != 4 || len(calls) != 3 || calls[0].Path != "/v1/x" || calls[0].Body != "first" || calls[0].Header.Get("X-Test") != "1" ||
		len(u.Calls("b.test")) != 1 {
		t.Fatalf("count %d, calls %+v", u.Count(), calls)
	}
}

func TestUpstreamPartsOnePerRead(t *testing.T) {
	u := NewUpstream(map[string][]Reply{AnyHost: {SSE("one", "", "three")}})
	resp := send(t, u, context.Background(), "http://a.test/", "").resp
	p := make([]byte, 64)
	for _, want := range []string{"one", "", "three"} {
		if n, err := resp.Body.Read(p); string(p[:n]) != want || err != nil {
			t.Fatalf("read %q, %v; want %q", p[:n], err, want)
		}
	}
	if _, err := resp.Body.Read(p); err != io.EOF {
		t.Fatalf("after the parts: %v", err)
	}
}

func TestUpstreamTransportError(t *testing.T) {
	refused := errors.New("dial tcp: connection refused")
	u := NewUpstream(map[string][]Reply{"a.test": {{Err: refused}}})
	if got := send(t, u, context.Background(), "http://a.test/", "body"); got.resp != nil || got.err != refused || got.wrote {
		t.Fatalf("got %+v", got)
	}
	if calls := u.Calls("a.test"); len(calls) != 1 || calls[0].Body != "body" {
		t.Fatalf("calls %+v", calls)
	}
	if send(t, u, context.Background(), "http://nowhere.test/", "").err == nil {
		t.Fatal("a host without replies was answered")
	}
}

func TestUpstreamEndlessAndClosed(t *testing.T) {
	closed := make(chan struct{})
	endless := SSE("ab")
	endless.Endless, endless.Closed = true, closed
	u := NewUpstream(map[string][]Reply{AnyHost: {endless}})
	resp := send(t, u, context.Background(), "http://a.test/", "").resp
	p := make([]byte, 2)
	for range 5 {
		if n, err := resp.Body.Read(p); string(p[:n]) != "ab" || err != nil {
			t.Fatalf("read %q, %v", p[:n], err)
		}
	}
	resp.Body.Close()
	resp.Body.Close()
	select {
	case <-closed:
	default:
		t.Fatal("Closed is open after the body was closed")
	}
	if _, err := resp.Body.Read(p); err == nil {
		t.Fatal("read after close succeeded")
	}
	// A second body of the reply does not close Closed again.
	send(t, u, context.Background(), "http://a.test/", "").resp.Body.Close()
}

func TestUpstreamDelay(t *testing.T) {
	slow := JSON(200, `{}`)
	slow.Delay = time.Hour
	u := NewUpstream(map[string][]Reply{AnyHost: {slow}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := send(t, u, ctx, "http://a.test/", "x"); !errors.Is(got.err, context.Canceled) || !got.wrote {
		t.Fatalf("cancelled wait: %+v", got)
	}
	slow.Delay = time.Millisecond
	u = NewUpstream(map[string][]Reply{AnyHost: {slow}})
	if got := send(t, u, context.Background(), "http://a.test/", "x"); got.err != nil || got.resp.StatusCode != 200 {
		t.Fatalf("delayed answer %+v", got)
	}
}

// TestUpstreamConcurrent is for the race detector.
func TestUpstreamConcurrent(t *testing.T) {
	u := NewUpstream(map[string][]Reply{AnyHost: {JSON(500, `{}`), JSON(200, `{"ok":true}`)}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				got := send(t, u, context.Background(), "http://a.test/", "x")
				if got.err != nil {
					t.Error(got.err)
					return
				}
				readAll(t, got.resp)
				got.resp.Body.Close()
				u.Calls("a.test")
			}
		})
	}
	wg.Wait()
	if u.Count() != 160 || len(u.Calls("a.test")) != 160 {
		t.Fatalf("count %d", u.Count())
	}
}

func TestUpstreamUnrecorded(t *testing.T) {
	u := NewUpstream(map[string][]Reply{AnyHost: {JSON(200, `{}`)}}).Unrecorded()
	if got := send(t, u, context.Background(), "http://a.test/", "body"); !got.wrote || !got.atEnd || u.Count() != 1 || len(u.Calls("a.test")) != 0 {
		t.Fatalf("sent %+v, count %d, calls %v", got, u.Count(), u.Calls("a.test"))
	}
	req, _ := http.NewRequest("POST", "http://a.test/", strings.NewReader("body"))
	allocs := testing.AllocsPerRun(100, func() {
		req.Body = io.NopCloser(strings.NewReader("body"))
		resp, _ := u.RoundTrip(req)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	if allocs > 3 { // the test's own request body (2) and the answer (1)
		t.Errorf("%v allocs per request", allocs)
	}
}
