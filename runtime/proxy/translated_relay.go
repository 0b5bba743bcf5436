package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/translate"
)

// maxTranslatedError bounds an upstream error answer read to translate it
// when inspect did not hold it: only its message is kept.
const maxTranslatedError = 1 << 20

var errBodyTooLarge = errors.New("body exceeds the bound on answers read whole")

var eventStreamType = []string{"text/event-stream"}

// relayTranslated answers the client in its own dialect from a translated
// candidate's response. Every branch reads usage (when there is any) from
// the translator, and names the upstream model that served as the model.
func (p *Proxy) relayTranslated(x *Exchange, a *attempt, res *record.Record) {
	defer a.finish()
	switch {
	case a.resp.StatusCode < 200 || a.resp.StatusCode > 299:
		p.relayTranslatedError(x, a, res)
	case x.Body.xlat.stream:
		p.relayTranslatedStream(x, a, res)
	default:
		p.relayTranslatedMessage(x, a, res)
	}
}

// translatedHeaders sets the relayed headers for a translated body: the
// upstream's length and encoding describe bytes the client never gets.
func translatedHeaders(x *Exchange, a *attempt) http.Header {
	h := relayHeaders(x, a)
	delete(h, "Content-Encoding")
	delete(h, "Content-Length")
	return h
}

// relayTranslatedError relays an upstream error status in the client's
// error shape, keeping the upstream's message and its retry hints.
func (p *Proxy) relayTranslatedError(x *Exchange, a *attempt, res *record.Record) {
	if !a.whole {
		a.releaseRead()
		a.head = GetBuffer()
		// A body cut short or too long still has a status worth
		// translating: the translator falls back to a message naming it.
		_ = readBounded(a.resp.Body, a.head, maxTranslatedError)
	}
	status, body := x.Body.xlat.pair.Error(a.resp.StatusCode, *a.head)
	translatedHeaders(x, a)
	dialect.WriteJSON(x.W, status, body)
	res.Status = status
}

// relayTranslatedMessage translates the whole non-stream answer inspect
// read and sends it with its length.
func (p *Proxy) relayTranslatedMessage(x *Exchange, a *attempt, res *record.Record) {
	var out []byte
	err := errBodyTooLarge
	if a.whole {
		out, res.Usage, err = x.Body.xlat.pair.Response(*a.head, a.cand.Model)
	}
	if err != nil {
		// The provider did the work and said what it cost: that is what
		// settles, whatever the client gets.
		res.Usage = a.usage
		if a.usage.Reported {
			res.UsageFrom = meter.SourcePassthrough
		}
		res.Err = fmt.Errorf("response from %q: %w", a.up.Name, err)
		e := dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamInvalidResponse,
			"provider %q answered with a response that could not be translated", a.up.Name)
		e.Transient = true // the next answer may well translate: it is the upstream's, not the request's
		p.answer(x, res, e)
		return
	}
	res.UsageFrom = meter.SourceTranslator
	translatedHeaders(x, a)
	dialect.WriteJSON(x.W, a.resp.StatusCode, out)
	res.Status = a.resp.StatusCode
}

// relayTranslatedStream translates an event stream as it arrives. An
// upstream that breaks, ends early or sends what cannot be translated has
// had the client sent its dialect's error event by the translator; the
// connection is then cut, as on the passthrough path.
func (p *Proxy) relayTranslatedStream(x *Exchange, a *attempt, res *record.Record) {
	h := translatedHeaders(x, a)
	h["Content-Type"] = eventStreamType
	x.W.WriteHeader(a.resp.StatusCode)
	res.Status = a.resp.StatusCode

	fw := &flushWriter{w: x.W}
	fw.flusher, _ = x.W.(http.Flusher)
	s := x.Body.xlat.pair.Stream(fw, a.cand.Model, x.Body.AskedUsage())
	upErr, xlatErr := pump(s, a.takeRead(), a.resp.Body)
	res.Usage, res.UsageFrom = s.Usage(), meter.SourceTranslator
	switch {
	case fw.err != nil:
		res.Status, res.Err = record.StatusClientClosed, fmt.Errorf("client write: %w", fw.err)
	case s.UpstreamError() != nil && xlatErr == nil:
		// Relayed as an error event, every write through: a client that
		// hangs up on reading it left after the answer (see relayStream).
		res.Err = fmt.Errorf("stream from %q: %w", a.up.Name, s.UpstreamError())
		p.Metrics.StreamFailure(a.up.Name, metrics.StreamUpstreamError)
	case x.Client.Context().Err() != nil && (upErr != nil || xlatErr != nil):
		// Cut as in relayStream: a half-closed client must not see a clean end.
		res.Status, res.Cut = record.StatusClientClosed, true
		res.Err = fmt.Errorf("client gone mid-stream: %w", context.Cause(x.Client.Context()))
	case xlatErr != nil:
		res.Cut = true
		res.Err = fmt.Errorf("stream from %q: %w", a.up.Name, errors.Join(upErr, xlatErr))
		p.Metrics.StreamFailure(a.up.Name, metrics.StreamIncomplete)
	}
}

// takeRead returns the body bytes inspect read before the attempt was taken
// as good, for the relay to send first.
func (a *attempt) takeRead() []byte {
	switch {
	case a.stream != nil:
		a.stream.commit()
		return a.stream.takeOut()
	case a.head != nil:
		return *a.head
	}
	return nil
}

// pump feeds read (what inspect already read), then the upstream body, to
// s through a pooled buffer and closes s at the end, however the body
// ended. upErr is the read failure, if any; xlatErr what the translator
// reported (a client write failure included).
func pump(s translate.Stream, read []byte, body io.Reader) (upErr, xlatErr error) {
	if len(read) > 0 {
		if _, err := s.Write(read); err != nil {
			return nil, err
		}
	}
	buf := copyPool.Get().(*[32 << 10]byte)
	defer copyPool.Put(buf)
	for {
		n, rerr := body.Read(buf[:])
		if n > 0 {
			if _, err := s.Write(buf[:n]); err != nil {
				return nil, err // the translator has ended the client's stream
			}
		}
		if rerr != nil {
			if rerr != io.EOF {
				upErr = rerr
			}
			return upErr, s.Close()
		}
	}
}

// flushWriter hands the translator's frames to the client, flushing each:
// the translator writes whole frames, once per upstream read at most. It
// keeps the client's write error apart from the upstream's.
type flushWriter struct {
	w       io.Writer
	flusher http.Flusher
	err     error
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		f.err = err
		return n, err
	}
	if f.flusher != nil {
		f.flusher.Flush()
	}
	return n, nil
}

// readBounded reads r whole into buf, failing past max bytes.
func readBounded(r io.Reader, buf *[]byte, max int) error {
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):min(cap(b), max+1)])
		b = b[:len(b)+n]
		*buf = b
		if len(b) > max {
			return errBodyTooLarge
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
