package h1_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRefusedBeforeSending(t *testing.T) {
	s := newServer(t, func(_ *server, w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	c := newClient(t, 4, time.Minute)
	cases := []struct {
		name  string
		build func(*http.Request)
	}{
		{"CRLF in value", func(r *http.Request) { r.Header.Set("X-A", "v\r\nX-Injected: 1") }},
		{"LF in value", func(r *http.Request) { r.Header["X-A"] = []string{"v\nX-Injected: 1"} }},
		{"NUL in value", func(r *http.Request) { r.Header["X-A"] = []string{"v\x00"} }},
		{"space in name", func(r *http.Request) { r.Header["X A"] = []string{"v"} }},
		{"colon in name", func(r *http.Request) { r.Header["X:A"] = []string{"v"} }},
		{"CRLF in name", func(r *http.Request) { r.Header["X-A\r\nX-B"] = []string{"v"} }},
		{"empty name", func(r *http.Request) { r.Header[""] = []string{"v"} }},
		{"https", func(r *http.Request) { r.URL.Scheme = "https" }},
		{"unknown length", func(r *http.Request) { r.Body, r.ContentLength = io.NopCloser(strings.NewReader("x")), -1 }},
		{"length without body", func(r *http.Request) { r.Body, r.ContentLength = nil, 5 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodPost, s.URL+"/", strings.NewReader("x"))
			tc.build(req)
			var body *closeCount
			if req.Body != nil {
				body = &closeCount{ReadCloser: req.Body}
				req.Body = body
			}
			if resp, err := c.RoundTrip(req); err == nil {
				resp.Body.Close()
				t.Fatal("RoundTrip succeeded")
			}
			if body != nil && body.n.Load() == 0 {
				t.Fatal("the refused request's body was not closed")
			}
		})
	}
	// Connections are accepted in the order they were dialled, so one
	// dialled by a refused request would have been counted before this.
	mustGet(t, c, s.URL+"/")
	s.wantNewConns(t, 1)
}

// closeCount counts the Close calls on a request body.
type closeCount struct {
	io.ReadCloser
	n atomic.Int32
}

func (b *closeCount) Close() error {
	b.n.Add(1)
	return b.ReadCloser.Close()
}

// rawRequest is a request head as it came off the wire, and its body.
type rawRequest struct {
	line    string
	headers []string // sorted, "Name: value"
	body    []byte
}

// captureServer records each request's bytes and answers 204.
func captureServer(t *testing.T) (*rawServer, <-chan rawRequest) {
	got := make(chan rawRequest, 8)
	s := newRawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			r, err := readRawRequest(br)
			if err != nil {
				return
			}
			got <- r
			io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}
	})
	return s, got
}

func readRawRequest(br *bufio.Reader) (r rawRequest, err error) {
	length := 0
	for i := 0; ; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			return r, err
		}
		line = strings.TrimSuffix(line, "\r\n")
		switch {
		case i == 0:
			r.line = line
			continue
		case line == "":
			slices.Sort(r.headers)
			r.body = make([]byte, length)
			_, err = io.ReadFull(br, r.body)
			return r, err
		case strings.HasPrefix(line, "Content-Length: "):
			if length, err = strconv.Atoi(strings.TrimPrefix(line, "Content-Length: ")); err != nil {
				return r, err
			}
		}
		r.headers = append(r.headers, line)
	}
}

func TestRequestFraming(t *testing.T) {
	s, got := captureServer(t)
	host := strings.TrimPrefix(s.url, "http://")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	cases := []struct {
		name, method, path, host string
		header                   http.Header
		body                     []byte
		wantLine                 string
		wantHeaders              []string
	}{{
		name: "get", method: http.MethodGet, path: "/v1/models?limit=2",
		header:      http.Header{"X-Trace": {"abc"}, "User-Agent": {""}},
		wantLine:    "GET /v1/models?limit=2 HTTP/1.1",
		wantHeaders: []string{"Content-Length: 0", "Host: " + host, "X-Trace: abc"},
	}, {
		name: "large post", method: http.MethodPost, path: "/v1/chat/completions", body: big,
		header: http.Header{
			"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}, "User-Agent": {"pistra-test"},
			// The client frames the message itself; these must not pass.
			"Transfer-Encoding": {"chunked"}, "Connection": {"close"}, "Keep-Alive": {"timeout=5"},
			"Content-Length": {"3"}, "Host": {"evil.test"}, "Te": {"trailers"}, "Upgrade": {"h2c"},
		},
		wantLine: "POST /v1/chat/completions HTTP/1.1",
		wantHeaders: []string{"Content-Length: 1048576", "Content-Type: application/json", "Host: " + host,
			"User-Agent: pistra-test", "X-Multi: a", "X-Multi: b"},
	}, {
		name: "host override", method: http.MethodPost, path: "/", host: "api.example.test", body: []byte(`{"a":1}`),
		wantLine:    "POST / HTTP/1.1",
		wantHeaders: []string{"Content-Length: 7", "Host: api.example.test"},
	}}
	c := newClient(t, 4, time.Minute)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != nil {
				body = bytes.NewReader(tc.body)
			}
			req, _ := http.NewRequestWithContext(guardCtx(t), tc.method, s.url+tc.path, body)
			req.Header, req.Host = tc.header, tc.host
			if req.Header == nil {
				req.Header = http.Header{}
			}
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var r rawRequest
			select {
			case r = <-got:
			case <-time.After(guard):
				t.Fatal("no request arrived")
			}
			if r.line != tc.wantLine {
				t.Errorf("request line %q, want %q", r.line, tc.wantLine)
			}
			if !slices.Equal(r.headers, tc.wantHeaders) {
				t.Errorf("headers\n got %q\nwant %q", r.headers, tc.wantHeaders)
			}
			if !bytes.Equal(r.body, tc.body) {
				t.Errorf("body: got %d bytes, want %d, or they differ", len(r.body), len(tc.body))
			}
		})
	}
	if n := s.accepted.Load(); n != 1 {
		t.Fatalf("accepted %d connections, want 1", n)
	}
}

func TestBodyLengthMismatch(t *testing.T) {
	s := newServer(t, func(_ *server, w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	c := newClient(t, 4, time.Minute)
	for _, length := range []int64{3, 10} {
		req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodPost, s.URL+"/", strings.NewReader("12345"))
		req.ContentLength = length
		if resp, err := c.RoundTrip(req); err == nil {
			resp.Body.Close()
			t.Fatalf("ContentLength %d for 5 bytes: RoundTrip succeeded", length)
		}
	}
	mustGet(t, c, s.URL+"/")
}
