// Package realtime runs WebSocket sessions (OpenAI Realtime, Gemini Live)
// once the gateway has routed, admitted and dialled them: it relays
// messages both ways as they come, reads the upstream's usage as it passes
// (a passive decoder that never changes, delays or drops a message),
// spends it on the session's ticket, and decides in one place how the
// session ended and what each side is told (docs/realtime.md).
package realtime

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// Ending is how a session ended, as pistra_session_endings_total labels it.
type Ending string

const (
	EndClientClosed   Ending = "client_closed"
	EndUpstreamClosed Ending = "upstream_closed"
	EndClientLost     Ending = "client_lost"
	EndUpstreamLost   Ending = "upstream_lost"
	EndBudget         Ending = "budget_exceeded"
	EndSuspended      Ending = "suspended"
	EndIdle           Ending = "idle"
)

// Session is one established session: both connections, and what it is
// metered and watched by.
type Session struct {
	Route            plan.Route
	Client, Upstream *websocket.Conn
	// Ticket is the session's admission, which the decoder spends usage on.
	Ticket admission.Ticket
	// Idle ends a session in which no message passed for this long; 0 for
	// no bound.
	Idle time.Duration
	// Tick is how often Watch and the idle bound are checked.
	Tick time.Duration
	// Watch says why the session must end now (a suspension of its key or
	// provider), "" while it may go on.
	Watch func() string
	// MeterOff is told once if the decoder turns itself off, and why.
	MeterOff func(why string)
}

// Result is how a session ended and what it used.
type Result struct {
	Ending Ending
	// Code and Reason are the close the gateway sent (or relayed).
	Code   websocket.StatusCode
	Reason string
	Usage  meter.Usage
	Err    error
}

// relayBuffer is how much of a message is read before it is written on:
// a message that fits goes on as one frame, a longer one streams.
const relayBuffer = 16 << 10

// closeWait bounds how long the pumps may take to end once the session
// is closing (each side's close handshake has its own 5 s bound).
const closeWait = 10 * time.Second

// side names a session's connection.
type side uint8

const (
	fromClient side = iota
	fromUpstream
)

// sideEnd is why a pump stopped: its source's read failed (or the peer
// closed), or its write to the other side did.
type sideEnd struct {
	from  side
	err   error
	write bool
}

// Run relays until either side closes, the budget is spent, Watch says
// stop or the session idles, then closes both sides and returns once both
// pumps are done.
func (s *Session) Run() Result {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	over := make(chan *admission.Refusal, 1)
	dec := &decoder{route: s.Route, stopped: s.MeterOff, spend: func(u *meter.Usage) {
		if no := admission.Spend(s.Ticket, u); no != nil {
			select {
			case over <- no:
			default:
			}
		}
	}}
	ends := make(chan sideEnd, 2)
	ctx := context.Background()
	go func() { ends <- pump(ctx, fromClient, s.Client, s.Upstream, nil, &last) }()
	go func() { ends <- pump(ctx, fromUpstream, s.Upstream, s.Client, dec, &last) }()
	res, pending := s.wait(ends, over, &last), 2
	if res.Ending == EndClientClosed || res.Ending == EndUpstreamClosed || res.Ending == EndClientLost || res.Ending == EndUpstreamLost {
		pending = 1
	}
	timeout := time.NewTimer(closeWait)
	defer timeout.Stop()
	for ; pending > 0; pending-- {
		select {
		case <-ends:
		case <-timeout.C:
			s.Client.CloseNow()
			s.Upstream.CloseNow()
			<-ends
		}
	}
	s.Client.CloseNow()
	s.Upstream.CloseNow()
	res.Usage = dec.total
	return res
}

// wait is the one place that decides how the session ends: the first of
// a side's end, the budget's refusal, a suspension or the idle bound. It
// closes what must be closed and says what it did.
func (s *Session) wait(ends <-chan sideEnd, over <-chan *admission.Refusal, last *atomic.Int64) Result {
	var tick <-chan time.Time
	if s.Tick > 0 {
		t := time.NewTicker(s.Tick)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case e := <-ends:
			return s.sideEnded(e)
		case no := <-over:
			return s.closeBoth(EndBudget, websocket.StatusPolicyViolation, no.Error.Message, nil)
		case <-tick:
			if why := s.watch(); why != "" {
				return s.closeBoth(EndSuspended, websocket.StatusPolicyViolation, why, nil)
			}
			if s.Idle > 0 && time.Since(time.Unix(0, last.Load())) > s.Idle {
				return s.closeBoth(EndIdle, websocket.StatusGoingAway, "session idle for "+s.Idle.String(), nil)
			}
		}
	}
}

func (s *Session) watch() string {
	if s.Watch == nil {
		return ""
	}
	return s.Watch()
}

// sideEnded relays one side's end to the other: a close with its code and
// reason as the peer sent them, or, when the side was lost without one,
// 1014 (bad gateway) to the client or 1001 (going away) to the upstream.
func (s *Session) sideEnded(e sideEnd) Result {
	from, to := s.Client, s.Upstream
	closed, lost, lostCode, lostReason := EndClientClosed, EndClientLost, websocket.StatusGoingAway, "client connection lost"
	if e.from == fromUpstream {
		from, to = to, from
		closed, lost, lostCode, lostReason = EndUpstreamClosed, EndUpstreamLost, websocket.StatusBadGateway, "upstream connection lost"
	}
	if e.write {
		// The other side broke under a write: it is the one lost.
		from.Close(websocket.StatusGoingAway, "peer connection lost")
		to.CloseNow()
		ending := EndUpstreamLost
		if e.from == fromUpstream {
			ending = EndClientLost
		}
		return Result{Ending: ending, Code: websocket.StatusGoingAway, Reason: "peer connection lost", Err: e.err}
	}
	var ce websocket.CloseError
	if errors.As(e.err, &ce) {
		code := ce.Code
		if code == websocket.StatusNoStatusRcvd {
			code = websocket.StatusNormalClosure // 1005 is never sent in a frame
		}
		to.Close(code, ce.Reason)
		return Result{Ending: closed, Code: code, Reason: ce.Reason}
	}
	to.Close(lostCode, lostReason)
	return Result{Ending: lost, Code: lostCode, Reason: lostReason, Err: e.err}
}

// closeBoth closes both sides with code and reason, at once.
func (s *Session) closeBoth(ending Ending, code websocket.StatusCode, reason string, err error) Result {
	reason = CloseReason(reason)
	done := make(chan struct{})
	go func() { s.Upstream.Close(code, reason); close(done) }()
	s.Client.Close(code, reason)
	<-done
	return Result{Ending: ending, Code: code, Reason: reason, Err: err}
}

// maxCloseReason is the longest close reason a frame carries: its payload
// is at most 125 bytes, two of them the code.
const maxCloseReason = 123

// CloseReason cuts r to maxCloseReason bytes, on a rune boundary.
func CloseReason(r string) string {
	if len(r) <= maxCloseReason {
		return r
	}
	r = r[:maxCloseReason]
	for len(r) > 0 && !utf8.ValidString(r) {
		r = r[:len(r)-1]
	}
	return r
}

// pump relays src's messages to dst in order until one side fails. A
// message that fits the buffer is written as one frame; a longer one is
// streamed piece by piece. dec (nil on the client's direction) reads a
// copy of each piece after it was written.
func pump(ctx context.Context, from side, src, dst *websocket.Conn, dec *decoder, last *atomic.Int64) sideEnd {
	for {
		typ, r, err := src.Reader(ctx)
		if err != nil {
			return sideEnd{from: from, err: err}
		}
		last.Store(time.Now().UnixNano())
		buf := buffers.Get().(*[]byte)
		err, write := relay(ctx, typ, r, dst, dec, *buf)
		buffers.Put(buf)
		if err != nil {
			return sideEnd{from: from, err: err, write: write}
		}
	}
}

// buffers lend a pump its buffer for one message at a time, so a session
// waiting for its next message (a voice session mostly is) holds none.
var buffers = sync.Pool{New: func() any { b := make([]byte, relayBuffer); return &b }}

// relay copies one message; write says the error was dst's.
func relay(ctx context.Context, typ websocket.MessageType, r io.Reader, dst *websocket.Conn, dec *decoder, buf []byte) (err error, write bool) {
	binary := typ == websocket.MessageBinary
	n, err := io.ReadFull(r, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		if err := dst.Write(ctx, typ, buf[:n]); err != nil {
			return err, true
		}
		dec.part(binary, buf[:n], true, true)
		return nil, false
	}
	if err != nil {
		return err, false
	}
	w, err := dst.Writer(ctx, typ)
	if err != nil {
		return err, true
	}
	for first := true; ; first = false {
		if _, err := w.Write(buf[:n]); err != nil {
			return err, true
		}
		dec.part(binary, buf[:n], first, false)
		n, err = io.ReadFull(r, buf)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if _, err := w.Write(buf[:n]); err != nil {
				return err, true
			}
			dec.part(binary, buf[:n], false, true)
			return w.Close(), true
		}
		if err != nil {
			return err, false
		}
	}
}
