package server

import (
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/record"
)

// authenticate resolves the caller's key to a profile on the active
// snapshot, which the request then keeps. Authorization: Bearer is read on
// every route; x-api-key too where Anthropic clients call (anthropicToo).
func (s *Server) authenticate(x *exchange, anthropicToo bool) *dialect.Error {
	key, present := credential(x.r, anthropicToo)
	how := "Authorization: Bearer <key>"
	if anthropicToo {
		how += " or x-api-key: <key>"
	}
	return s.authenticateKey(x, key, present, how)
}

// authenticateKey resolves key, presented as how says when it was not.
func (s *Server) authenticateKey(x *exchange, key string, present bool, how string) *dialect.Error {
	x.snap = s.snap.Load()
	if !present {
		return dialect.Errorf(http.StatusUnauthorized, dialect.CodeMissingAPIKey, "no API key provided; send %s", how)
	}
	k, p, ok := x.snap.KeyOf(key)
	if !ok {
		return dialect.Errorf(http.StatusUnauthorized, dialect.CodeInvalidAPIKey, "the API key is not valid")
	}
	x.key, x.profile = k, p
	x.rec.Profile = x.snap.Graph.Profiles[p].Name
	return s.suspensions.Key(x.snap.Graph.Keys[k].Name)
}

// credential returns the key the client presented, and whether it
// presented one at all (an Authorization header of another scheme counts
// as presented, and fails the lookup).
func credential(r *http.Request, xAPIKey bool) (string, bool) {
	if v := r.Header.Get("Authorization"); v != "" {
		if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
			return strings.TrimSpace(v[7:]), true
		}
		return "", true
	}
	if xAPIKey {
		if v := r.Header.Get("X-Api-Key"); v != "" {
			return v, true
		}
	}
	return "", false
}

// checkAnthropicVersion requires the anthropic-version header on
// /v1/messages. Any date is accepted (2023-06-01, 2026-10-21, whatever
// comes next): the body is relayed as the client wrote it for that version.
func checkAnthropicVersion(r *http.Request) *dialect.Error {
	v := r.Header.Get("Anthropic-Version")
	if v == "" {
		return dialect.Errorf(http.StatusBadRequest, dialect.CodeMissingVersion, "anthropic-version: header is required")
	}
	if !isDate(v) {
		return dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidVersion,
			"anthropic-version: %q is not a version date (YYYY-MM-DD)", truncate(v, 40))
	}
	return nil
}

func isDate(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i != 4 && i != 7 && (v[i] < '0' || v[i] > '9') {
			return false
		}
	}
	return true
}

// checkContentType accepts application/json, with parameters, and a body
// with no declared type; anything else is refused.
func checkContentType(r *http.Request) *dialect.Error {
	ct := r.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return dialect.Errorf(http.StatusUnsupportedMediaType, dialect.CodeUnsupportedMediaType,
		"Content-Type %q is not supported; send application/json", truncate(ct, 80))
}

// readDeadliner is what net/http's response writer offers to bound reads
// of its request.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// readBodyWithin is readBody bounded by the exchange's body watchdog,
// which cuts a body that takes longer than the body read timeout. After a
// failure the connection keeps a read deadline, so Go's server, which
// reads what is left of a body before it answers, gives up on a stalled
// client too. Not http.Server's ReadTimeout: that deadline stays on the
// connection while the handler runs, and when it passes Go's server
// cancels the request's context, cutting every stream longer than the
// timeout.
func (s *Server) readBodyWithin(x *exchange, r *http.Request, buf *[]byte) *dialect.Error {
	rd, ok := x.w.w.(readDeadliner)
	if !ok {
		return readBody(r, s.opts.MaxBodyBytes, buf)
	}
	x.bodyRead.begin(s.opts.BodyReadTimeout, rd)
	e := readBody(r, s.opts.MaxBodyBytes, buf)
	cut := x.bodyRead.end()
	switch {
	case e == nil && cut:
		// Cut as the read ended: the body took the whole limit, and Go's
		// server, reading on for the next request, may have met the past
		// deadline and cancelled this one. It is refused as late.
		return bodyLate(len(*buf))
	case e != nil && !cut:
		rd.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout))
	}
	return e
}

// bodyLate is the refusal of a body that did not arrive in time.
func bodyLate(read int) *dialect.Error {
	return dialect.Errorf(http.StatusRequestTimeout, dialect.CodeRequestTimeout,
		"the request body did not arrive in time (%d bytes read)", read)
}

// readBody reads the whole request body into buf, refusing one longer than
// limit. Reading it all before anything goes upstream also keeps Go's HTTP/1
// server from cutting a response while the request is unread (golang/go#40747).
func readBody(r *http.Request, limit int64, buf *[]byte) *dialect.Error {
	// A func, not a value: most requests fit, and the message is formatted.
	tooLarge := func() *dialect.Error {
		return dialect.Errorf(http.StatusRequestEntityTooLarge, dialect.CodeRequestTooLarge,
			"the request body exceeds the %d-byte limit", limit)
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	// Size for the declared length, but only up to 1 MiB ahead of the bytes
	// actually arriving: a declaration alone must not reserve 32 MiB.
	if want := min(r.ContentLength, 1<<20); want > int64(cap(*buf)) {
		*buf = make([]byte, 0, want)
	}
	err := proxy.ReadBounded(r.Body, buf, limit)
	switch {
	case err == nil:
		// Closed once read to its end, so the server does not go looking
		// for more of it (a pooled 8 KiB buffer and a read) when the
		// answer's head is written.
		r.Body.Close()
		return nil
	case errors.Is(err, proxy.ErrTooLarge):
		return tooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		return bodyLate(len(*buf))
	case clientLeft(r, err):
		return errClientLeft
	}
	return dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidJSON, "reading the request body: %v", err)
}

// errClientLeft is what readBody returns when the client went away before
// its body was in: recorded as a 499, answered to no one (refuse writes
// nothing for it).
var errClientLeft = &dialect.Error{Status: record.StatusClientClosed, Message: "the client left while sending the request body"}

// clientLeft reports whether a body read failed because the client went
// away: the connection closed short of the declared length or mid-chunk
// (an unexpected EOF), or failed under the read (a reset), or the
// request's context ended. A malformed body (a bad chunk header, say) is
// the client's error, answered 400.
func clientLeft(r *http.Request, err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || r.Context().Err() != nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// notFound answers a path pistrad does not serve, in the dialect the
// request looks like it speaks.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	id := requestIDOf(r)
	w.Header()[record.HeaderRequestID] = []string{id}
	writerFor(dialectOf(r)).WriteError(w, id, dialect.Errorf(http.StatusNotFound, dialect.CodeRouteNotFound,
		"%s %s is not a pistra route", r.Method, truncate(r.URL.Path, 200)))
}

// cutModelID splits /v1/models/{id}; the id may itself hold slashes
// (org/model names).
func cutModelID(path string) (string, bool) {
	id, ok := strings.CutPrefix(path, "/v1/models/")
	return id, ok && id != ""
}
