package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// commonHeads are answers of the common shape, which readHead parses
// itself.
var commonHeads = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nx-request-id: abc\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Usage: 7\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nslow!",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nConnection: clo\xc5\xbfe\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 3\r\n\r\nabcEXTRA",
}

// headSeeds are those and answers of every shape readHead leaves to
// net/http.
var headSeeds = append(slices.Clip(commonHeads), []string{
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Usage\r\n\r\n3\r\nabc\r\n0\r\nX-Usage: 7\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nok",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\nread to close",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
	"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n X-Lead: a\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX Bad: a\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-Ctl: a\x01b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-Obs: caf\xc3\xa9 \t\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n: empty\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nNoColon\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Usage: 7",
	"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", 1500) + "\r\nContent-Length: 0\r\n\r\n",
}...)

// FuzzReadHead holds readHead to http.ReadResponse: the same answer or
// the same failure, the same body and trailer, and the same bytes left on
// the connection after the body.
func FuzzReadHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(headSeeds[0]), true)
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		method := http.MethodPost
		if head {
			method = http.MethodHead
		}
		compareHeads(t, data, method)
	})
}

func TestReadHeadMatchesNetHTTP(t *testing.T) {
	for _, s := range headSeeds {
		compareHeads(t, []byte(s), http.MethodPost)
		compareHeads(t, []byte(s), http.MethodHead)
	}
}

// TestReadHeadTakesTheCommonShape: the answers pistrad's upstreams send
// are parsed by readHead itself, not left to net/http.
func TestReadHeadTakesTheCommonShape(t *testing.T) {
	for _, s := range commonHeads {
		raw, ok := peekHead(bufio.NewReader(strings.NewReader(s)))
		if resp, _ := parseHead(raw); !ok || resp == nil {
			t.Errorf("left to net/http: %q", s)
		}
	}
}

// headReader is a small buffer, so heads longer than it reach net/http.
func headReader(data []byte) *bufio.Reader { return bufio.NewReaderSize(bytes.NewReader(data), 1024) }

func compareHeads(t *testing.T, data []byte, method string) {
	t.Helper()
	req := &http.Request{Method: method}
	gr, wr := headReader(data), headReader(data)
	got, gerr := readHead(gr, req)
	want, werr := http.ReadResponse(wr, req)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: readHead: %v, net/http: %v", data, gerr, werr)
	}
	if gerr != nil {
		return
	}
	type head struct {
		Status                string
		StatusCode            int
		Proto                 string
		ProtoMajor            int
		ProtoMinor            int
		Header                http.Header
		ContentLength         int64
		TransferEncoding      []string
		Close, NoBody, HasReq bool
	}
	view := func(r *http.Response) head {
		return head{r.Status, r.StatusCode, r.Proto, r.ProtoMajor, r.ProtoMinor, r.Header, r.ContentLength,
			r.TransferEncoding, r.Close, r.Body == http.NoBody, r.Request == req}
	}
	if g, w := view(got), view(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%q:\nreadHead %+v\nnet/http %+v", data, g, w)
	}
	gb, gerr := io.ReadAll(got.Body)
	wb, werr := io.ReadAll(want.Body)
	if !bytes.Equal(gb, wb) || (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: body %q, %v; net/http's %q, %v", data, gb, gerr, wb, werr)
	}
	if !reflect.DeepEqual(got.Trailer, want.Trailer) {
		t.Fatalf("%q: trailer %v; net/http's %v", data, got.Trailer, want.Trailer)
	}
	if gerr == nil && !got.Close {
		// What a kept connection would read next.
		gl, _ := io.ReadAll(gr)
		wl, _ := io.ReadAll(wr)
		if !bytes.Equal(gl, wl) {
			t.Fatalf("%q: left %q; net/http left %q", data, gl, wl)
		}
	}
}
