package h1

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"unsafe"

	"golang.org/x/net/http/httpguts"
)

// parseRequest parses a request head of the common shape (raw, through
// its blank line) into sc.req, reporting false for any other: Fallback
// reads that one, so what parseRequest accepts reads as net/http would
// read it (FuzzParseRequest holds it to that). sc.req is only a template:
// the handler gets a copy with the request's context (serveRequest), so
// http.Request's one way to set a context, a copy, is the only Request
// made per request.
func (sc *serverConn) parseRequest(raw []byte) bool {
	// One copy of the head becomes every string the request holds.
	b := bytes.Clone(raw[:len(raw)-4])
	line, rest, _ := bytes.Cut(b, crlf)
	method, line, ok1 := bytes.Cut(line, space)
	target, proto, ok2 := bytes.Cut(line, space)
	if !ok1 || !ok2 || !bytes.Equal(proto, http11[:8]) || !token(method) || len(target) == 0 || target[0] != '/' {
		return false
	}
	switch string(method) {
	case http.MethodHead, http.MethodConnect: // no body in the answer; a tunnel
		return false
	}
	fields, ok := canonicalNames(rest)
	if !ok || fields == 0 { // no Host
		return false
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	off := len(method) + 1
	r := &sc.req
	*r = http.Request{
		Method: s[:len(method)], RequestURI: s[off : off+len(target)],
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, fields), RemoteAddr: sc.remote,
	}
	if !readFields(r, s[len(method)+len(target)+len(proto)+4:], fields) {
		return false
	}
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return false
	}
	r.URL = u
	return true
}

// readFields reads the header lines of s into r, reporting false for any
// field the common shape leaves to net/http.
func readFields(r *http.Request, s string, fields int) bool {
	sawLength, hosts := false, 0
	ok := headFields(s, r.Header, fields, func(name, v string) (add, ok bool) {
		switch name {
		case "Transfer-Encoding", "Expect", "Upgrade", "Trailer", "Pragma":
			return false, false
		case "Content-Length":
			n, ok := contentLength(v)
			if sawLength || !ok {
				return false, false
			}
			sawLength, r.ContentLength = true, n
		case "Host":
			if hosts++; hosts > 1 || !httpguts.ValidHostHeader(v) {
				return false, false
			}
			r.Host = v
		case "Connection":
			if !keepOrClose(v) {
				return false, false
			}
		}
		return true, true
	})
	// HTTP/1.1 asks for exactly one Host; net/http refuses a request
	// without, and deletes the field from the map it hands over.
	if !ok || hosts != 1 {
		return false
	}
	delete(r.Header, "Host")
	r.Close = httpguts.HeaderValuesContainsToken(r.Header["Connection"], "close")
	return true
}

// keepOrClose reports whether a Connection value holds only keep-alive
// and close tokens, the ones the common shape takes.
func keepOrClose(v string) bool {
	for tok := range strings.SplitSeq(v, ",") {
		switch tok = strings.TrimSpace(tok); {
		case strings.EqualFold(tok, "keep-alive"), strings.EqualFold(tok, "close"):
		default:
			return false
		}
	}
	return true
}

// token reports whether b is a non-empty token (a method).
func token(b []byte) bool {
	for _, c := range b {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
	}
	return len(b) > 0
}

var space = []byte(" ")
