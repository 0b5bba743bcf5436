package h1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/net/http/httpguts"
)

// serveRequest runs the handler for the request parseRequest read and
// finishes its answer. It reports whether the connection can carry the
// next request.
func (sc *serverConn) serveRequest() (keep bool) {
	ctx, cancel := context.WithCancel(sc.ctx)
	r := sc.req.WithContext(ctx)
	sc.req = http.Request{} // an idle connection keeps no request alive
	w := &sc.res
	w.reset(sc, r)
	if r.ContentLength > 0 {
		body := &reqBody{sc: sc, left: r.ContentLength}
		r.Body, sc.body = body, body
		defer body.Close() // a read after the handler returned must not take the next request's bytes
	} else {
		sc.body = nil
		r.Body = http.NoBody
		sc.watched.Store(true)
	}
	sc.cancelMu.Lock()
	sc.cancel = cancel
	sc.cancelMu.Unlock()
	defer func() {
		sc.watched.Store(false)
		sc.cancelMu.Lock()
		sc.cancel = nil
		sc.cancelMu.Unlock()
		cancel()
		if p := recover(); p != nil {
			w.finished = true // a goroutine the handler left writes nothing into pooled buffers
			if p != http.ErrAbortHandler {
				sc.s.logf("h1: panic serving %s: %v\n%s", sc.remote, p, debug.Stack())
			}
			keep = false
		}
	}()
	sc.s.Handler.ServeHTTP(w, r)
	return w.finish()
}

func (s *Server) logf(format string, args ...any) {
	if l := s.Fallback.ErrorLog; l != nil {
		l.Printf(format, args...)
	}
}

// reqBody is a request body of a known length, read off the connection.
type reqBody struct {
	sc     *serverConn
	left   int64
	closed bool
}

func (b *reqBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.sc.br.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		b.sc.watched.Store(true) // the connection has nothing more to say
		return n, io.EOF
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close ends the handler's reads; what is left unread the server drops or
// closes the connection on (dropUnread).
func (b *reqBody) Close() error {
	b.closed = true
	return nil
}

// maxDrain is what finish reads of a body the handler left unread, to keep
// the connection, as net/http does; past it the connection closes.
const maxDrain = 256 << 10

// chunkingAfter is how much of an answer of unknown length is held before
// its head goes, so a short answer goes with a Content-Length, as
// net/http's does.
const chunkingAfter = 2048

// response is Server's http.ResponseWriter, one per connection, reset for
// each request. Its head is written straight from the handler's map.
type response struct {
	sc     *serverConn
	req    *http.Request
	header http.Header
	status int
	// length is the answer's declared length, -1 when none; written what
	// went out of the body.
	length, written int64
	wroteHeader     bool // the status is set
	headSent        bool
	finished        bool // the handler returned: nothing more goes out
	chunked         bool
	closeAfter      bool
	deadlines       atomic.Bool // one was set (a watchdog may, from its goroutine); cleared at the end
	held            []byte
	err             error // the first write error
	// digits and date are where numbers and the Date are formatted: a
	// buffer on the stack would escape through the writer.
	digits [20]byte
	date   [len(http.TimeFormat)]byte
}

func (w *response) reset(sc *serverConn, r *http.Request) {
	h := w.header
	if h == nil {
		h = make(http.Header)
	}
	clear(h)
	held := w.held[:0]
	*w = response{}
	w.sc, w.req, w.header, w.length, w.held = sc, r, h, -1, held
	w.closeAfter = r.Close
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols { // informational: goes at once, the answer follows
		w.writeStatus(code)
		w.writeFields(false)
		w.sc.bw.WriteString("\r\n")
		w.setErr(w.sc.bw.Flush())
		return
	}
	w.wroteHeader, w.status = true, code
	if code == http.StatusSwitchingProtocols { // a protocol this server does not speak follows
		w.closeAfter = true
	}
	if cl := w.header["Content-Length"]; len(cl) > 0 { // framing comes from sendHead, never from the map
		if v, err := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64); err == nil && v >= 0 {
			w.length = v
		}
	}
}

func (w *response) Write(p []byte) (int, error) {
	if w.finished {
		return 0, errFinished
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.headSent {
		if w.length < 0 && len(w.held)+len(p) <= chunkingAfter {
			w.held = append(w.held, p...)
			return len(p), nil
		}
		w.sendHead(w.length < 0)
	}
	return w.writeBody(p)
}

// WriteString is Write without the copy io.WriteString would make.
func (w *response) WriteString(s string) (int, error) {
	return w.Write(unsafe.Slice(unsafe.StringData(s), len(s))) // read only: Write never keeps or changes p
}

// writeBody sends p, in a chunk when the answer is chunked.
func (w *response) writeBody(p []byte) (int, error) {
	if len(p) == 0 || w.err != nil {
		return 0, w.err
	}
	bw := w.sc.bw
	if w.chunked {
		bw.Write(strconv.AppendInt(w.digits[:0], int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		_, err := bw.WriteString("\r\n")
		w.setErr(err)
	} else {
		if w.written+int64(len(p)) > w.length {
			return 0, http.ErrContentLength
		}
		_, err := bw.Write(p)
		w.setErr(err)
	}
	if w.err != nil {
		return 0, w.err
	}
	w.written += int64(len(p))
	return len(p), nil
}

// errFinished is what a write after the handler returned gets.
var errFinished = errors.New("h1: the handler has returned")

func (w *response) setErr(err error) {
	if w.err == nil && err != nil {
		w.err = err
	}
}

func (w *response) Flush() { _ = w.FlushError() }

// FlushError sends what is held, the head first (chunked when no length
// was declared), and flushes the connection.
func (w *response) FlushError() error {
	if w.finished {
		return errFinished
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(w.length < 0 && bodyAllowed(w.status))
	}
	w.setErr(w.sc.bw.Flush())
	return w.err
}

// SetReadDeadline and SetWriteDeadline bound the connection's reads and
// writes, as net/http's writer does for http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error {
	w.deadlines.Store(true)
	return w.sc.c.SetReadDeadline(t)
}

func (w *response) SetWriteDeadline(t time.Time) error {
	w.deadlines.Store(true)
	return w.sc.c.SetWriteDeadline(t)
}

// sendHead writes the status line and fields, then the held body. The
// framing is the server's own, from what WriteHeader saw: the handler's
// Content-Length and Transfer-Encoding fields are not written as they are.
func (w *response) sendHead(chunked bool) {
	w.headSent, w.chunked = true, chunked
	held := w.held
	w.held = held[:0]
	h := w.header
	if _, typed := h["Content-Type"]; !typed && len(held) > 0 && bodyAllowed(w.status) && h["Content-Encoding"] == nil {
		h["Content-Type"] = []string{http.DetectContentType(held)}
	}
	if w.sc.s.closing.Load() || httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		w.closeAfter = true
	}
	w.dropUnread()
	if w.closeAfter {
		delete(h, "Connection")
	}
	bw := w.sc.bw
	w.writeStatus(w.status)
	w.writeFields(true)
	switch {
	case chunked:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case w.length < 0 && bodyAllowed(w.status):
		w.length = int64(len(held))
		fallthrough
	case w.length >= 0 && (bodyAllowed(w.status) || w.status == http.StatusNotModified):
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(w.digits[:0], w.length, 10))
		bw.WriteString("\r\n")
	}
	if w.closeAfter {
		bw.WriteString("Connection: close\r\n")
	}
	_, err := bw.WriteString("\r\n")
	w.setErr(err)
	if len(held) > 0 {
		w.writeBody(held)
	}
}

func (w *response) writeStatus(code int) {
	bw := w.sc.bw
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(w.digits[:0], int64(code), 10))
	bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		bw.WriteString(text)
	} else {
		bw.WriteString("status code ")
		bw.WriteString(strconv.Itoa(code))
	}
	bw.WriteString("\r\n")
}

// writeFields writes the handler's fields, as net/http would send them:
// invalid names left out, line breaks in values made spaces, the framing
// fields left to sendHead, a Date added to a final answer that has no Date
// field (one set to nil asks for none).
func (w *response) writeFields(final bool) {
	bw := w.sc.bw
	for k, vv := range w.header {
		if k == "Content-Length" || k == "Transfer-Encoding" || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range vv {
			if strings.ContainsAny(v, "\r\n") {
				v = newlinesToSpace.Replace(v)
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(strings.TrimSpace(v))
			bw.WriteString("\r\n")
		}
	}
	if _, dated := w.header["Date"]; final && !dated {
		bw.WriteString("Date: ")
		bw.Write(time.Now().UTC().AppendFormat(w.date[:0], http.TimeFormat))
		bw.WriteString("\r\n")
	}
}

// newlinesToSpace is what net/http does to a line break in a field value.
var newlinesToSpace = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

// finish ends the answer once the handler has returned and reports
// whether the connection can carry the next request.
func (w *response) finish() bool {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headSent {
		w.sendHead(false)
	}
	if w.chunked {
		_, err := w.sc.bw.WriteString("0\r\n\r\n")
		w.setErr(err)
	}
	w.setErr(w.sc.bw.Flush())
	w.finished = true
	if w.deadlines.Load() {
		w.sc.c.SetReadDeadline(time.Time{})
		w.sc.c.SetWriteDeadline(time.Time{})
	}
	short := !w.chunked && bodyAllowed(w.status) && w.written < w.length
	return w.err == nil && !short && !w.closeAfter
}

// dropUnread deals with a request body the handler left unread, before the
// answer's head goes, as net/http does: up to maxDrain is read and
// dropped, so the connection carries on; more closes the connection after
// the answer (Connection: close), and the close waits for the client to
// read the answer before the unread bytes make the kernel reset it.
func (w *response) dropUnread() {
	b := w.sc.body // not w.req.Body: a handler may have wrapped it (http.MaxBytesReader)
	if b == nil || b.left == 0 {
		return
	}
	if b.left <= maxDrain { // off the connection: the handler may have closed the body
		n, err := io.CopyN(io.Discard, w.sc.br, b.left)
		b.left -= n
		if err == nil {
			w.sc.watched.Store(true) // the connection has nothing more to say
			return
		}
	}
	w.closeAfter, w.sc.linger = true, true
}

// bodyAllowed reports whether an answer with status may carry a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
