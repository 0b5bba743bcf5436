package h1_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInformationalResponses(t *testing.T) {
	s := newRawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			switch req.URL.Path {
			case "/switch":
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			default:
				io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"+
					"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+
					"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}
	})
	c := newClient(t, 4, time.Minute)
	ctx := guardCtx(t)

	resp, body, err := fetch(ctx, c, http.MethodGet, s.url+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body != "ok" {
		t.Fatalf("got %d %q, want 200 \"ok\"", resp.StatusCode, body)
	}
	if link := resp.Header.Get("Link"); link != "" {
		t.Errorf("a 1xx header leaked into the final response: Link %q", link)
	}

	if resp, _, err := fetch(ctx, c, http.MethodGet, s.url+"/switch", nil); err == nil {
		t.Fatalf("101 accepted as a response: %d", resp.StatusCode)
	}
	// The failed exchange took its connection down with it.
	mustGet(t, c, s.url+"/")
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("accepted %d connections, want 2", n)
	}
}

func TestResponsesWithoutBodyKeepConnection(t *testing.T) {
	s := newServer(t, func(_ *server, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/empty" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Length", "100")
		if r.Method != http.MethodHead {
			io.WriteString(w, strings.Repeat("x", 100))
		}
	})
	c := newClient(t, 4, time.Minute)
	cases := []struct {
		name, method, path string
		wantStatus         int
		readAll            bool // else the body is only closed
	}{
		{"204 read", http.MethodGet, "/empty", http.StatusNoContent, true},
		{"204 closed", http.MethodGet, "/empty", http.StatusNoContent, false},
		{"HEAD read", http.MethodHead, "/", http.StatusOK, true},
		{"HEAD closed", http.MethodHead, "/", http.StatusOK, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(guardCtx(t), tc.method, s.URL+tc.path, nil)
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.readAll {
				if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 0 {
					t.Fatalf("body %q, %v; want none", b, err)
				}
			}
			resp.Body.Close()
			if got := mustGet(t, c, s.URL+"/"); len(got) != 100 {
				t.Fatalf("next GET: %d bytes, want 100", len(got))
			}
			s.wantNewConns(t, 1)
		})
	}
}

func TestBodyReadsAfterTheEnd(t *testing.T) {
	s := newServer(t, func(_ *server, w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	c := newClient(t, 4, time.Minute)
	req, _ := http.NewRequestWithContext(guardCtx(t), http.MethodGet, s.URL+"/", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
		t.Fatalf("body %q, %v", b, err)
	}
	// A reader that has said EOF keeps saying it (bufio.Reader, for one,
	// asks again after handing an EOF on).
	if n, err := resp.Body.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF: %d, %v; want 0, EOF", n, err)
	}
	resp.Body.Close()
	mustGet(t, c, s.URL+"/") // the connection went back to the pool once
	s.wantNewConns(t, 1)
}

func TestWroteRequestTrace(t *testing.T) {
	s := newServer(t, func(_ *server, w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) })
	c := newClient(t, 4, time.Minute)
	errBody := errors.New("body source failed")
	cases := []struct {
		name    string
		body    io.Reader
		length  int64
		wantErr error // nil: the request goes through
	}{
		{"ok", strings.NewReader("hello"), 5, nil},
		{"no body", nil, 0, nil},
		{"body fails", io.MultiReader(strings.NewReader("hel"), errReader{errBody}), 5, errBody},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				calls []error
			)
			trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
				mu.Lock()
				calls = append(calls, i.Err)
				mu.Unlock()
			}}
			ctx := httptrace.WithClientTrace(guardCtx(t), trace)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", tc.body)
			req.ContentLength = tc.length
			resp, err := c.RoundTrip(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 1 {
				t.Fatalf("WroteRequest called %d times, want 1", len(calls))
			}
			if tc.wantErr == nil {
				if err != nil || calls[0] != nil {
					t.Fatalf("RoundTrip: %v; WroteRequest: %v; want both nil", err, calls[0])
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !errors.Is(calls[0], tc.wantErr) {
				t.Fatalf("RoundTrip: %v; WroteRequest: %v; want both to wrap %v", err, calls[0], tc.wantErr)
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
