package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"
	"unsafe"

	"golang.org/x/net/http/httpguts"
)

// readHead reads one response head from br, as http.ReadResponse does.
// http.ReadResponse makes a string per line and per header name and value,
// about fifteen objects for an ordinary answer; readHead makes one string
// for the whole head and cuts the rest from it. It takes the common shape
// only: an HTTP/1.1 answer with a body framed by a Content-Length or
// chunked encoding, no Trailer, Pragma or folded line, all in br's buffer.
// Anything else, and anything malformed, it leaves unread for
// http.ReadResponse, so what it accepts reads exactly as net/http reads it
// (FuzzReadHead holds it to that).
func readHead(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	raw, ok := peekHead(br)
	if !ok || req.Method == http.MethodHead {
		return http.ReadResponse(br, req)
	}
	resp, te := parseHead(raw)
	if resp == nil {
		return http.ReadResponse(br, req)
	}
	br.Discard(len(raw))
	resp.Request = req
	switch {
	case te:
		resp.TransferEncoding = chunked
		resp.Body = &chunkedBody{r: br, cr: httputil.NewChunkedReader(br), resp: resp}
	case resp.ContentLength == 0:
		resp.Body = http.NoBody
	default:
		resp.Body = &lengthBody{r: br, left: resp.ContentLength}
	}
	return resp, nil
}

// chunked is the TransferEncoding of every chunked answer; net/http's is
// the header's own value, equally never written to.
var chunked = []string{"chunked"}

// peekHead returns the head at the start of br's buffer, through its
// blank line, reading more into the buffer as needed. It reports false
// for a head that does not fit the buffer, ends a line without CR, or
// could not be read whole (the error is http.ReadResponse's to meet).
func peekHead(br *bufio.Reader) ([]byte, bool) {
	from := 0 // where the search for the blank line resumes
	for n := max(br.Buffered(), 1); ; {
		buf, err := br.Peek(n)
		if end := headEnd(buf, from); end > 0 {
			return buf[:end], true
		} else if end < 0 {
			return nil, false
		}
		if err != nil {
			return nil, false
		}
		from = max(len(buf)-3, 0)
		n = max(br.Buffered(), len(buf)+1) // what the last fill brought, else one more fill
	}
}

// headEnd finds "\r\n\r\n" in buf from from: the length of the head
// through it, 0 while it is not there yet, -1 for a bare LF, which
// net/http accepts and readHead leaves to it.
func headEnd(buf []byte, from int) int {
	for i := from; i < len(buf); i++ {
		if buf[i] != '\n' {
			continue
		}
		if i == 0 || buf[i-1] != '\r' {
			return -1
		}
		if i >= 3 && buf[i-2] == '\n' && buf[i-3] == '\r' {
			return i + 1
		}
	}
	return 0
}

// parseHead parses a head of the common shape, nil for any other. te
// reports a chunked body; otherwise ContentLength is set.
func parseHead(raw []byte) (resp *http.Response, te bool) {
	// One copy of the head becomes every string the response holds. It
	// is never written once the string is made.
	b := bytes.Clone(raw[:len(raw)-4]) // without the blank line's CRLFs
	line, rest, _ := bytes.Cut(b, crlf)
	if len(line) < 12 || !bytes.HasPrefix(line, http11) || !digits(line[9:12]) || (len(line) > 12 && line[12] != ' ') {
		return nil, false
	}
	code := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, false
	}
	fields, ok := canonicalNames(rest)
	if !ok {
		return nil, false
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	resp = &http.Response{
		Status: s[9:len(line)], StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, fields), ContentLength: -1,
	}
	sawLength := false
	ok = headFields(s[min(len(line)+2, len(s)):], resp.Header, fields, func(name, v string) (add, ok bool) {
		switch name {
		case "Pragma", "Trailer":
			return false, false
		case "Transfer-Encoding":
			if te || v != "chunked" {
				return false, false
			}
			te = true
			return false, true // net/http moves it to TransferEncoding
		case "Content-Length":
			n, ok := contentLength(v)
			if sawLength || !ok {
				return false, false
			}
			sawLength, resp.ContentLength = true, n
		}
		return true, true
	})
	if !ok {
		return nil, false
	}
	if te == sawLength { // both (net/http then drops the length) or neither (read to close)
		return nil, false
	}
	if te {
		resp.ContentLength = -1
	}
	resp.Close = closes(resp.Header)
	return resp, te
}

var (
	http11     = []byte("HTTP/1.1 ")
	crlf       = []byte("\r\n")
	doubleCRLF = []byte("\r\n\r\n")
	colon      = []byte(":")
)

// contentLength reads a Content-Length value of the shape both parsers
// take: decimal digits only, short enough not to overflow.
func contentLength(v string) (int64, bool) {
	if len(v) > 18 || !digits(v) {
		return 0, false
	}
	var n int64
	for i := range len(v) {
		n = n*10 + int64(v[i]-'0')
	}
	return n, true
}

func digits[T string | []byte](b T) bool {
	for i := range len(b) {
		if b[i] < '0' || b[i] > '9' {
			return false
		}
	}
	return len(b) > 0
}

// canonicalize makes a header name canonical in place, as
// textproto.CanonicalMIMEHeaderKey would, reporting false for a name that
// is empty or holds a byte outside a token (a space, say), which net/http
// refuses.
func canonicalize(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	upper := true
	for i, c := range name {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
		switch {
		case upper && 'a' <= c && c <= 'z':
			name[i] = c - 'a' + 'A'
		case !upper && 'A' <= c && c <= 'Z':
			name[i] = c - 'A' + 'a'
		}
		upper = c == '-'
	}
	return true
}

// canonicalNames makes the names of a head's field lines (rest, CRLF
// between them) canonical in place, before the head's string is made, and
// counts the lines; false for a line without a colon or with a name net/http
// refuses.
func canonicalNames(rest []byte) (fields int, ok bool) {
	if len(rest) == 0 {
		return 0, true
	}
	for l := range bytes.SplitSeq(rest, crlf) {
		name, _, found := bytes.Cut(l, colon)
		if !found || !canonicalize(name) {
			return 0, false
		}
		fields++
	}
	return fields, true
}

// headFields walks a head's field lines s (CRLF between them, the names
// made canonical already), calling take with each name and value, trimmed
// as net/http trims it; a value net/http refuses, or take's !ok, stops the
// walk with false. The fields take adds go into h, their values cut from
// one slice of n strings.
func headFields(s string, h http.Header, n int, take func(name, v string) (add, ok bool)) bool {
	values := make([]string, n)
	for at := 0; at < len(s); {
		l := s[at:]
		if i := strings.Index(l, "\r\n"); i >= 0 {
			l = l[:i]
		}
		at += len(l) + 2
		name, v, _ := strings.Cut(l, ":")
		v = strings.Trim(v, " \t")
		if !httpguts.ValidHeaderFieldValue(v) {
			return false
		}
		switch add, ok := take(name, v); {
		case !ok:
			return false
		case !add:
			continue
		}
		if vv := h[name]; vv != nil {
			h[name] = append(vv, v)
			continue
		}
		vv := values[:1:1]
		values = values[1:]
		vv[0] = v
		h[name] = vv
	}
	return true
}

// closes reports whether the answer closes its connection, removing a
// Connection header that says so, as net/http does for HTTP/1.1 (with
// the same httpguts).
func closes(h http.Header) bool {
	if !httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		return false
	}
	delete(h, "Connection")
	return true
}

// lengthBody is a body of a known length. An end of the connection before
// it is all read is io.ErrUnexpectedEOF, never a clean end: a truncated
// answer must not pass as a whole one.
type lengthBody struct {
	r    io.Reader
	left int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		err = io.EOF // with the last bytes, as net/http's body: the connection goes back at once
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *lengthBody) Close() error { return nil }

// chunkedBody is a chunked body: once its last chunk is read it reads the
// trailer section, keeping any fields in the response's Trailer.
type chunkedBody struct {
	r    *bufio.Reader
	cr   io.Reader
	resp *http.Response
	err  error // the end, once reached
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.cr.Read(p)
	if err == io.EOF {
		err = b.readTrailer()
	}
	b.err = err
	return n, err
}

var errTrailerEOF = fmt.Errorf("h1: %w reading trailer", io.ErrUnexpectedEOF)

// readTrailer reads what follows the last chunk, as net/http does: a
// blank line, or trailer fields and one.
func (b *chunkedBody) readTrailer() error {
	buf, err := b.r.Peek(2)
	if bytes.Equal(buf, crlf) {
		b.r.Discard(2)
		return io.EOF
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !trailerEndBuffered(b.r) {
		return errors.New("h1: trailer after chunked body longer than the read buffer")
	}
	hdr, err := textproto.NewReader(b.r).ReadMIMEHeader()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errTrailerEOF
		}
		return err
	}
	if b.resp.Trailer == nil {
		b.resp.Trailer = make(http.Header, len(hdr))
	}
	for k, vv := range hdr {
		b.resp.Trailer[k] = vv
	}
	return io.EOF
}

// trailerEndBuffered reports whether the trailer's blank line is within
// what the buffer holds or can take, so a peer cannot feed an unbounded
// trailer; net/http refuses the same.
func trailerEndBuffered(r *bufio.Reader) bool {
	for n := 4; ; n++ {
		buf, err := r.Peek(n)
		if bytes.HasSuffix(buf, doubleCRLF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func (b *chunkedBody) Close() error { return nil }
