package fakeprovider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// WithoutUsage serves h, typically a Server, as an upstream that reports
// no usage at all: the "usage" member is removed from every JSON answer
// and from every streamed event, at the top level and inside the
// "message" (Anthropic's message_start) and "response" (the Responses
// API's events) objects, and a Chat Completions chunk that carried nothing
// but usage is dropped whole. That is how an OpenAI-compatible server that
// does not meter, or a surface the gateway has no usage reader for,
// answers: a gateway metering it has nothing to settle against. Everything
// else passes unchanged; streamed events are still flushed one by one.
func WithoutUsage(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &usageStripper{w: w}
		h.ServeHTTP(sw, r)
		sw.finish()
	})
}

// How a usageStripper passes an answer on, decided by its content type
// when the status is written.
const (
	stripUndecided = iota
	stripPass      // not JSON: unchanged
	stripJSON      // one JSON document: held whole, rewritten at the end
	stripSSE       // server-sent events: rewritten event by event
)

type usageStripper struct {
	w      http.ResponseWriter
	status int
	mode   int
	// pending is the whole body (stripJSON) or the unfinished event
	// (stripSSE).
	pending []byte
}

func (u *usageStripper) Header() http.Header { return u.w.Header() }

func (u *usageStripper) WriteHeader(status int) {
	if u.mode != stripUndecided {
		return
	}
	u.status = status
	switch ct := u.w.Header().Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		u.mode = stripSSE
	case strings.HasPrefix(ct, "application/json"):
		u.mode = stripJSON
		return // the length changes: the status goes out with the body
	default:
		u.mode = stripPass
	}
	u.w.WriteHeader(status)
}

func (u *usageStripper) Write(p []byte) (int, error) {
	if u.mode == stripUndecided {
		u.WriteHeader(http.StatusOK)
	}
	switch u.mode {
	case stripJSON:
		u.pending = append(u.pending, p...)
		return len(p), nil
	case stripSSE:
		u.pending = append(u.pending, p...)
		for {
			end := bytes.Index(u.pending, []byte("\n\n"))
			if end < 0 {
				return len(p), nil
			}
			ev := stripEvent(u.pending[:end+2])
			rest := copy(u.pending, u.pending[end+2:])
			u.pending = u.pending[:rest]
			if _, err := u.w.Write(ev); err != nil {
				return 0, err
			}
		}
	}
	return u.w.Write(p)
}

// FlushError is what http.ResponseController.Flush calls: the fake's
// streams flush after every event.
func (u *usageStripper) FlushError() error {
	if u.mode == stripJSON {
		return nil
	}
	return http.NewResponseController(u.w).Flush()
}

// finish writes what was held back: a JSON answer, rewritten, with its
// new length.
func (u *usageStripper) finish() {
	switch u.mode {
	case stripJSON:
		b, _, _ := removeUsage(u.pending)
		u.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		u.w.WriteHeader(u.status)
		_, _ = u.w.Write(b)
	case stripSSE:
		if len(u.pending) > 0 {
			_, _ = u.w.Write(u.pending)
		}
	}
}

// stripEvent rewrites the data lines of one event (ending "\n\n"), or
// returns nothing for a chat chunk that carried only usage.
func stripEvent(ev []byte) []byte {
	var out []byte
	for line := range bytes.SplitAfterSeq(ev, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || !bytes.HasPrefix(data, []byte("{")) {
			out = append(out, line...)
			continue
		}
		b, hadUsage, noChoices := removeUsage(bytes.TrimSuffix(data, []byte("\n")))
		if hadUsage && noChoices {
			return nil
		}
		out = append(append(append(out, "data: "...), b...), '\n')
	}
	return out
}

// removeUsage returns the JSON object obj without its "usage" member, and
// without that of its "message" and "response" members; it reports whether
// it had one at the top level, and whether its "choices" is an empty
// array. Anything but an object is returned as it is. The members kept
// keep their order and bytes.
func removeUsage(obj []byte) (out []byte, hadUsage, noChoices bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return obj, false, false
	}
	out = append(make([]byte, 0, len(obj)), '{')
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		var v json.RawMessage
		if err != nil || !isKey || dec.Decode(&v) != nil {
			return obj, false, false
		}
		switch key {
		case "usage":
			hadUsage = true
			continue
		case "message", "response":
			v, _, _ = removeUsage(v)
		case "choices":
			noChoices = bytes.Equal(bytes.TrimSpace(v), []byte("[]"))
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendString(out, key)
		out = append(append(out, ':'), v...)
	}
	return append(out, '}'), hadUsage, noChoices
}
