package h1

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"net/textproto"
	"reflect"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// commonRequests are heads parseRequest reads itself: what the SDKs send.
var commonRequests = []string{
	"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: OpenAI/Go 3.0\r\nContent-Length: 2\r\nAccept: application/json\r\nAuthorization: Bearer sk-x\r\nContent-Type: application/json\r\nX-Stainless-Retry-Count: 0\r\nAccept-Encoding: gzip\r\n\r\n{}",
	"POST /v1/messages?beta=true HTTP/1.1\r\nhost: localhost\r\nx-api-key: k\r\nanthropic-version: 2023-06-01\r\ncontent-length: 0\r\nconnection: keep-alive\r\n\r\n",
	"GET /readyz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: h\r\nAccept: application/json, text/event-stream\r\nAccept: x\r\nContent-Length: 3\r\n\r\n{}\n",
}

// otherRequests are left to net/http, well formed or not.
var otherRequests = []string{
	"POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET / HTTP/1.0\r\n\r\n",
	"GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
	"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
	"GET / HTTP/1.1\nHost: h\n\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nx",
	"GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n",
	"G@T / HTTP/1.1\r\nHost: h\r\n\r\n",
}

// parseOwn is what Server reads of data: the request, or nil when it
// leaves the connection to net/http.
func parseOwn(data []byte) *http.Request {
	br := bufio.NewReaderSize(bytes.NewReader(data), 4<<10)
	raw, ok := peekHead(br)
	if !ok {
		return nil
	}
	sc := &serverConn{remote: "192.0.2.1:1"}
	if !sc.parseRequest(raw) {
		return nil
	}
	return &sc.req
}

func TestParseRequestTakesTheCommonShapeOnly(t *testing.T) {
	for _, r := range commonRequests {
		if parseOwn([]byte(r)) == nil {
			t.Errorf("left to net/http: %q", r)
		}
	}
	for _, r := range otherRequests {
		if parseOwn([]byte(r)) != nil {
			t.Errorf("read itself: %q", r)
		}
	}
}

// FuzzParseRequest: a request parseRequest reads, net/http's server reads
// the same way: method, target, URL, header, host, length and close.
func FuzzParseRequest(f *testing.F) {
	for _, r := range append(commonRequests, otherRequests...) {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		own := parseOwn(data)
		if own == nil {
			return
		}
		std, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err == nil {
			err = serverChecks(data, std)
		}
		if err != nil {
			t.Fatalf("net/http's server refuses what parseRequest read: %v\n%q", err, data)
		}
		switch {
		case own.Method != std.Method, own.RequestURI != std.RequestURI, own.URL.String() != std.URL.String(),
			own.Host != std.Host, own.ContentLength != std.ContentLength, own.Close != std.Close,
			own.Proto != std.Proto, len(std.TransferEncoding) != 0:
			t.Fatalf("parseRequest read %+v\nnet/http %+v\n%q", own, std, data)
		case !reflect.DeepEqual(own.Header, std.Header):
			t.Fatalf("header %v\nnet/http %v\n%q", own.Header, std.Header, data)
		}
	})
}

// serverChecks are the checks net/http's server adds to ReadRequest's,
// which has taken Host out of the header already.
func serverChecks(data []byte, r *http.Request) error {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	if _, err := tp.ReadLine(); err != nil {
		return err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return err
	}
	if hosts := h["Host"]; len(hosts) != 1 || !httpguts.ValidHostHeader(hosts[0]) {
		return errors.New("missing or malformed Host")
	}
	for k, vv := range r.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return errors.New("invalid header name")
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return errors.New("invalid header value")
			}
		}
	}
	return nil
}
