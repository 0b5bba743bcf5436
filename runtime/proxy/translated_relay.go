package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/translate"
)

// maxTranslatedError bounds an upstream error answer read to translate it
// when inspect did not hold it: only its message is kept.
const maxTranslatedError = 1 << 20

var eventStreamType = []string{"text/event-stream"}

// relayTranslated answers the client in its own dialect from a translated
// candidate's response. Every branch reads usage (when there is any) from
// the translator, and names the upstream model that served as the model.
func (p *Proxy) relayTranslated(x *Exchange, a *attempt) {
	switch {
	case a.resp.StatusCode < 200 || a.resp.StatusCode > 299:
		p.relayTranslatedError(x, a)
	case x.Body.xlat.stream:
		p.relayTranslatedStream(x, a)
	default:
		p.relayTranslatedMessage(x, a)
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
func (p *Proxy) relayTranslatedError(x *Exchange, a *attempt) {
	if !a.whole {
		a.releaseRead()
		a.head = GetBuffer()
		// A body cut short or too long still has a status worth
		// translating: the translator falls back to a message naming it.
		_ = ReadBounded(a.resp.Body, a.head, maxTranslatedError)
	}
	status, body := x.Body.xlat.pair.Error(a.resp.StatusCode, *a.head)
	p.deliverJSON(x, a, status, body, seen{})
}

// relayTranslatedMessage translates the whole non-stream answer inspect
// read and sends it with its length.
func (p *Proxy) relayTranslatedMessage(x *Exchange, a *attempt) {
	var out []byte
	var u meter.Usage
	err := ErrTooLarge
	if a.whole {
		out, u, err = x.Body.xlat.pair.Response(*a.head, a.cand.Model)
	}
	if err != nil {
		// The provider did the work and said what it cost: that is what
		// settles, whatever the client gets.
		res := x.Record
		res.Usage, res.UsageFrom = a.usage, passthroughUsage(a.usage).from
		res.Err = fmt.Errorf("response from %q: %w", a.up.Name, err)
		e := dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamInvalidResponse,
			"provider %q answered with a response that could not be translated", a.up.Name)
		e.Transient = true // the next answer may well translate: it is the upstream's, not the request's
		p.answer(x, res, e)
		return
	}
	p.deliverJSON(x, a, a.resp.StatusCode, out, seen{usage: u, from: meter.SourceTranslator})
}

// deliverJSON sends a whole translated JSON body with its length.
func (p *Proxy) deliverJSON(x *Exchange, a *attempt, status int, body []byte, read seen) {
	h := translatedHeaders(x, a)
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	x.pass = passSource{head: body, read: read}
	p.deliver(x, a, status, &x.pass, nil, false)
}

// relayTranslatedStream translates an event stream as it arrives. An
// upstream that breaks, ends early or sends what cannot be translated is
// told to the client by the ending, with the same error event as on the
// passthrough path, and the connection is then cut.
func (p *Proxy) relayTranslatedStream(x *Exchange, a *attempt) {
	h := translatedHeaders(x, a)
	h["Content-Type"] = eventStreamType
	t := xlatPool.Get().(*xlatSource)
	defer t.put()
	t.read = a.takeRead()
	t.s = x.Body.xlat.pair.Stream(t, a.cand.Model, x.Body.AskedUsage())
	p.deliver(x, a, a.resp.StatusCode, t, a.resp.Body, true)
}

// takeRead returns the body bytes inspect read before the attempt was taken
// as good, for the relay to send first.
func (a *attempt) takeRead() []byte {
	switch {
	case a.stream != nil:
		out, _ := a.stream.start()
		return out
	case a.head != nil:
		return *a.head
	}
	return nil
}

// xlatSource is a translated stream as the pump copies it: the upstream's
// bytes go to the translator, and the frames it writes for them (whole
// ones, once a call at most) are what the client gets. One is pooled per
// stream in flight.
type xlatSource struct {
	s translate.Stream
	// read is what inspect read, translated first.
	read []byte
	// frames holds what the translator wrote since the last call.
	frames []byte
}

var (
	_        source = (*xlatSource)(nil)
	xlatPool        = sync.Pool{New: func() any { return new(xlatSource) }}
)

func (t *xlatSource) put() {
	t.s, t.read = nil, nil
	if cap(t.frames) <= maxPooledStream {
		xlatPool.Put(t)
	}
}

// Write is the translator's client writer.
func (t *xlatSource) Write(p []byte) (int, error) {
	t.frames = append(t.frames, p...)
	return len(p), nil
}

func (t *xlatSource) start() ([]byte, error) {
	if len(t.read) == 0 {
		return nil, nil
	}
	return t.next(t.read)
}

func (t *xlatSource) next(p []byte) ([]byte, error) {
	t.frames = t.frames[:0]
	_, err := t.s.Write(p)
	return t.frames, err
}

// end closes the translator, which writes the final frames or, for a
// stream that stopped before its message finished, says so.
func (t *xlatSource) end(readErr error) ([]byte, error) {
	t.frames = t.frames[:0]
	err := t.s.Close()
	if err != nil && readErr != nil {
		err = errors.Join(readErr, err)
	}
	return t.frames, err
}

func (t *xlatSource) seen(r *seen) {
	*r = seen{usage: t.s.Usage(), from: meter.SourceTranslator, reported: t.s.UpstreamError(), told: toldByEvent}
}
