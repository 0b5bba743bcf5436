package h1_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/h1"
)

// TestStreamedEventsArriveOneByOne proves incremental delivery: the server
// sends event i+1 only after the test has read event i through the client,
// so a client that buffered ahead would stall here.
func TestStreamedEventsArriveOneByOne(t *testing.T) {
	const events = 5
	next := make(chan struct{})
	s := newServer(t, func(s *server, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/events" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			case <-s.quit:
				return
			}
		}
	})
	c := newClient(t, 4, time.Minute)
	req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodGet, s.URL+"/events", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != -1 || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) {
		t.Fatalf("framing: ContentLength %d, TransferEncoding %q; want a chunked stream", resp.ContentLength, resp.TransferEncoding)
	}
	br := bufio.NewReader(resp.Body)
	for i := range events {
		if got, want := readEvent(t, br), fmt.Sprintf("data: %d\n\n", i); got != want {
			t.Fatalf("event %d: %q, want %q", i, got, want)
		}
		select {
		case next <- struct{}{}:
		case <-time.After(guard):
			t.Fatal("server stopped streaming")
		}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the last event: %q, %v", rest, err)
	}
	mustGet(t, c, s.URL+"/")
	s.wantNewConns(t, 1) // a stream read to its end leaves the connection reusable
}

// readEvent reads one server-sent event: a data line and a blank line.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev string
	for range 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading event: %q, %v", ev+line, err)
		}
		ev += line
	}
	return ev
}

var errClientGone = errors.New("client went away")

// cancelCase ends a request early: through its context, with and without
// a cause of its own, or by firing the Cut that Do watches.
type cancelCase struct {
	name  string
	cause error // passed to the CancelCauseFunc or to Fire
	want  error // what the error must wrap
	byCut bool
}

var cancelCases = []cancelCase{
	{"plain", nil, context.Canceled, false},
	{"cause", errClientGone, errClientGone, false},
	{"cut", errClientGone, errClientGone, true},
	{"cut without cause", nil, context.Canceled, true},
}

// send makes a GET of url whose round trip cancel ends the case's way.
func (tc cancelCase) send(t *testing.T, c *h1.Client, url string) (roundTrip func() (*http.Response, error), cancel func()) {
	ctx, cancelCtx := context.WithCancelCause(guardCtx(t))
	t.Cleanup(func() { cancelCtx(nil) })
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if !tc.byCut {
		return func() (*http.Response, error) { return c.RoundTrip(req) }, func() { cancelCtx(tc.cause) }
	}
	cut := new(h1.Cut)
	return func() (*http.Response, error) { return c.Do(req, cut) }, func() { cut.Fire(tc.cause) }
}

// abortServer answers /ok at once. On /hold it signals arrived, optionally
// sends one event, then waits for the client to hang up and signals aborted.
func abortServer(t *testing.T, sendFirst bool) (s *server, arrived, aborted chan struct{}) {
	arrived, aborted = make(chan struct{}, 1), make(chan struct{}, 1)
	s = newServer(t, func(s *server, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hold" {
			io.WriteString(w, "ok")
			return
		}
		if sendFirst {
			io.WriteString(w, "data: 0\n\n")
			w.(http.Flusher).Flush()
		}
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
			aborted <- struct{}{}
		case <-s.quit:
		}
	})
	return s, arrived, aborted
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(guard):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestCancelWhileWaitingForHeaders(t *testing.T) {
	for _, tc := range cancelCases {
		t.Run(tc.name, func(t *testing.T) {
			s, arrived, aborted := abortServer(t, false)
			c := newClient(t, 4, time.Minute)
			roundTrip, cancel := tc.send(t, c, s.URL+"/hold")
			type result struct {
				resp *http.Response
				err  error
			}
			res := make(chan result, 1)
			go func() {
				resp, err := roundTrip()
				res <- result{resp, err}
			}()
			waitSignal(t, arrived, "the request")
			cancel()
			var r result
			select {
			case r = <-res:
			case <-time.After(guard):
				t.Fatal("RoundTrip did not return after cancel")
			}
			if r.err == nil {
				r.resp.Body.Close()
				t.Fatal("RoundTrip succeeded after cancel")
			}
			if !errors.Is(r.err, tc.want) {
				t.Fatalf("error %v does not wrap %v", r.err, tc.want)
			}
			waitSignal(t, aborted, "the client to hang up")
			mustGet(t, c, s.URL+"/ok")
			s.wantNewConns(t, 2)
		})
	}
}

func TestCancelWhileReadingBody(t *testing.T) {
	for _, tc := range cancelCases {
		t.Run(tc.name, func(t *testing.T) {
			s, _, aborted := abortServer(t, true)
			c := newClient(t, 4, time.Minute)
			roundTrip, cancel := tc.send(t, c, s.URL+"/hold")
			resp, err := roundTrip()
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			readEvent(t, br)
			res := make(chan error, 1)
			go func() {
				_, err := br.ReadByte() // blocks: nothing more is sent
				res <- err
			}()
			cancel()
			select {
			case err = <-res:
			case <-time.After(guard):
				t.Fatal("Read did not return after cancel")
			}
			if err == nil || !errors.Is(err, tc.want) {
				t.Fatalf("read error %v does not wrap %v", err, tc.want)
			}
			waitSignal(t, aborted, "the client to hang up")
			mustGet(t, c, s.URL+"/ok")
			s.wantNewConns(t, 2)
		})
	}
}
