package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/record"
)

// ending is how a relay ended, as facts; end decides from them, in one
// place, what the record says: its status, whether the connection is cut,
// its error, the usage it settles on, and whether the client is sent an
// error event. The pump fills the copy's facts and the answer's source
// what it read (seen); end adds whether the client's request is done.
//
// A relay that copies in its own way (a WebSocket session, an MCP or A2A
// stream) supplies the same facts and calls end: the first client write
// that failed (wrote); the first upstream read that failed (read; a clean
// end is none); why the answer is not whole as its reader judged it
// (broken, nil when whole; short when it was judged at a clean end); and
// what it read of the answer: the usage and who read it, the upstream's
// own error that ended it (reported), and how a broken answer is told to
// the client besides the cut (told).
type ending struct {
	wrote  error
	read   error
	broken error
	short  bool
	seen
	gone bool
}

// seen is what a relay read of the answer it relayed.
type seen struct {
	usage meter.Usage
	from  meter.Source
	// reported is the upstream's own error, which the client got as sent
	// and which ended the answer.
	reported error
	told     told
}

// told is how a client learns its answer broke, besides the cut.
type told uint8

const (
	// toldByCut: bytes the gateway does not read (compressed, too large
	// to hold), to which it cannot add an event; not counted as a stream.
	toldByCut told = iota
	// toldByEvent: end writes the client dialect's error event, the same
	// for a passthrough stream and a translated one.
	toldByEvent
)

// verdict is how a relay ended, decided from its facts.
type verdict uint8

const (
	complete verdict = iota
	// clientLeft: a write to the client failed; it has gone.
	clientLeft
	// clientGone: the client's request ended while the answer was still
	// coming, and the upstream read was cancelled for it: the upstream did
	// not break.
	clientGone
	// upstreamError: the upstream's own error event ended the answer.
	upstreamError
	// upstreamBroke: a read failed, or the source could not read what
	// came, mid-answer.
	upstreamBroke
	// upstreamIncomplete: the upstream ended cleanly short of the
	// answer's end (a stream without its terminal event).
	upstreamIncomplete
)

// verdict decides. The order is the rule: a failed write means the
// client left, whatever the upstream did; an error event the client got
// whole ended the answer, even when the client hung up on reading it (SDKs
// do); only then does a client whose request ended explain a failed read.
func (e *ending) verdict() verdict {
	switch {
	case e.wrote != nil:
		return clientLeft
	case e.reported != nil:
		return upstreamError
	case e.gone && (e.read != nil || e.broken != nil):
		return clientGone
	case e.short:
		return upstreamIncomplete
	case e.broken != nil:
		return upstreamBroke
	}
	return complete
}

// end records how the relay of provider up's answer to x ended. The usage
// is what settles, whatever the client got: the status settled on is the
// upstream's, kept in UpstreamStatus.
func (p *Proxy) end(x *Exchange, up string, e *ending) {
	res := x.Record
	res.Usage, res.UsageFrom = e.usage, e.from
	e.gone = x.Client.Context().Err() != nil
	switch e.verdict() {
	case clientLeft:
		clientLeftFirst(res, fmt.Errorf("client write: %w", e.wrote), false)
	case clientGone:
		// Cut all the same: a client that only half-closed may still be
		// reading, and must not take a short answer for a whole one.
		clientLeftFirst(res, fmt.Errorf("client gone mid-answer: %w", context.Cause(x.Client.Context())), true)
	case upstreamError:
		res.Err = fmt.Errorf("stream from %q: %w", up, e.reported)
		p.Metrics.StreamFailure(up, metrics.StreamUpstreamError)
	case upstreamBroke, upstreamIncomplete:
		p.cut(x, up, e)
	}
}

// clientLeftFirst records a client that left before its answer was whole:
// a 499, whatever it was sent, cut when it may still be reading.
func clientLeftFirst(res *record.Record, err error, cut bool) {
	res.Status, res.Err, res.Cut = record.StatusClientClosed, err, cut
}

// cut ends a broken answer: the connection is cut after the client is
// told, when it can be, with an error event in its dialect, so its SDK
// raises an API error rather than taking a truncated answer for a whole
// one.
func (p *Proxy) cut(x *Exchange, up string, e *ending) {
	res := x.Record
	res.Cut = true
	how, why := "ended short", "ended without its terminal event"
	if !e.short {
		// A failed read is the cause the client is told, whatever the
		// source made of it (a translator adds that the message is short).
		cause := e.read
		if cause == nil {
			cause = e.broken
		}
		how, why = "broke", "broke: "+cause.Error()
	}
	res.Err = fmt.Errorf("answer from %q %s: %w", up, how, e.broken)
	if e.told == toldByCut {
		return
	}
	ev := dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamStreamIncomplete,
		"the stream from provider %q %s", up, why)
	_ = newClientWriter(x.W, true).write(x.Dialect.AppendStreamError(nil, x.Route, x.RequestID, ev))
	p.Metrics.StreamFailure(up, metrics.StreamIncomplete)
}

// errNoTerminal is a stream's verdict on itself when the upstream ended
// cleanly before the stream's terminal event.
var errNoTerminal = errors.New("the stream ended without its terminal event")
