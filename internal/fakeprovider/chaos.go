package fakeprovider

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Chaos injects a fault drawn at random into a share of the API calls, for
// the chaos run (bench/chaos): where Faults misbehave the same way on every
// call, Chaos makes each call fail its own way, as a flaky upstream does.
//
// The draw is a pure function of the seed, the call's body and how many
// times this server has seen that body: a gateway's retry of a request
// draws afresh, and a run repeated with the same seed and the same requests
// meets the same faults in the same places whatever order concurrent calls
// arrive in (a server restarted mid-run starts counting again).
type Chaos struct {
	// Seed keys the draw; two servers given the same seed fail the same
	// calls the same way, so give each its own.
	Seed uint64
	// Rate is the share of calls that get a fault, 0..1.
	Rate float64
	// Kinds are the faults drawn from, with equal weight among those that
	// apply to the call (stream faults to streams, half-body to whole
	// answers, 529 to Anthropic-dialect answers). Empty means all.
	Kinds []ChaosKind
	// Stall is how long the stall faults hold an answer: longer than the
	// gateway's provider timeout, to exercise it.
	Stall time.Duration
}

// ChaosKind is one fault Chaos can draw.
type ChaosKind string

// The kinds, by their names in flags.
const (
	Chaos500 ChaosKind = "500"
	Chaos502 ChaosKind = "502"
	Chaos503 ChaosKind = "503"
	// Chaos529 is Anthropic's overloaded status; drawn for Anthropic answers only.
	Chaos529 ChaosKind = "529"
	// Chaos429 is a rate limit, with retry-after (one second).
	Chaos429 ChaosKind = "429"
	// ChaosReset resets the connection (TCP RST) before any response byte.
	ChaosReset ChaosKind = "reset"
	// ChaosStall holds the response back for Stall before its first byte.
	ChaosStall ChaosKind = "stall"
	// ChaosCut drops a stream's connection after 1 to 8 events.
	ChaosCut ChaosKind = "cut"
	// ChaosOpeningError, ChaosMidError and ChaosNoTerminal are the stream
	// breaks of the same names (see Break).
	ChaosOpeningError ChaosKind = "opening-error"
	ChaosMidError     ChaosKind = "mid-error"
	ChaosNoTerminal   ChaosKind = "no-terminal"
	// ChaosStallMid waits Stall between a stream's events.
	ChaosStallMid ChaosKind = "stall-mid"
	// ChaosHalfBody is BreakHalfBody: a whole answer cut off halfway.
	ChaosHalfBody ChaosKind = "half-body"
	// ChaosStallBody sends a whole answer's headers and half its body,
	// then waits Stall before the rest.
	ChaosStallBody ChaosKind = "stall-body"
)

// ChaosKinds lists every kind, in a fixed order (the draw depends on it).
var ChaosKinds = []ChaosKind{
	Chaos500, Chaos502, Chaos503, Chaos529, Chaos429, ChaosReset, ChaosStall,
	ChaosCut, ChaosOpeningError, ChaosMidError, ChaosNoTerminal, ChaosStallMid, ChaosHalfBody, ChaosStallBody,
}

// ParseChaosKinds reads a comma-separated list of kinds; "" or "all" is
// every kind.
func ParseChaosKinds(s string) ([]ChaosKind, error) {
	if s == "" || s == "all" {
		return slices.Clone(ChaosKinds), nil
	}
	var out []ChaosKind
	for word := range strings.SplitSeq(s, ",") {
		k := ChaosKind(strings.TrimSpace(word))
		if !slices.Contains(ChaosKinds, k) {
			return nil, fmt.Errorf("chaos: unknown fault %q (want some of %s)", k, JoinChaosKinds(ChaosKinds))
		}
		out = append(out, k)
	}
	return out, nil
}

// JoinChaosKinds is the comma-separated list ParseChaosKinds reads.
func JoinChaosKinds(ks []ChaosKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// Validate reports knobs that make no sense.
func (c Chaos) Validate() error {
	switch {
	case c.Rate < 0 || c.Rate > 1:
		return fmt.Errorf("chaos: rate %v is not a share (0..1)", c.Rate)
	case c.Stall < 0:
		return fmt.Errorf("chaos: stall %v is negative", c.Stall)
	}
	for _, k := range c.Kinds {
		if !slices.Contains(ChaosKinds, k) {
			return fmt.Errorf("chaos: unknown fault %q", k)
		}
	}
	return nil
}

// applies reports whether k can befall a call answered in dialect, as a
// stream or not.
func (k ChaosKind) applies(d Dialect, stream bool) bool {
	switch k {
	case Chaos529:
		return d == DialectAnthropic
	case ChaosCut, ChaosOpeningError, ChaosMidError, ChaosNoTerminal, ChaosStallMid:
		return stream
	case ChaosHalfBody, ChaosStallBody:
		return !stream
	}
	return true
}

// faults are the Faults that make k happen to one call, where Faults can
// express it (not ChaosReset nor ChaosStallBody, which spoil applies).
func (k ChaosKind) faults(rng *rand.Rand, stall time.Duration) Faults {
	var f Faults
	switch k {
	case Chaos500, Chaos502, Chaos503, Chaos529, Chaos429:
		f.FailStatus, _ = strconv.Atoi(string(k))
	case ChaosStall:
		f.FirstByteDelay = stall
	case ChaosCut:
		f.CutAfter = 1 + rng.IntN(8)
	case ChaosOpeningError:
		f.Break = BreakOpeningError
	case ChaosMidError:
		f.Break = BreakMidError
	case ChaosNoTerminal:
		f.Break = BreakNoTerminal
	case ChaosStallMid:
		f.ChunkDelay = stall
	case ChaosHalfBody:
		f.Break = BreakHalfBody
	}
	return f
}

// chaosState is a server's Chaos and how often it has seen each body.
type chaosState struct {
	c    Chaos
	salt uint64 // the dialect's, so a process's two servers draw apart
	mu   sync.Mutex
	seen map[uint64]uint64
	// drawn counts the faults injected, by kind (under mu).
	drawn map[ChaosKind]int64
}

// maxSeenBodies bounds the memory of bodies seen; past it counting starts over.
const maxSeenBodies = 1 << 20

func newChaosState(c Chaos, d Dialect) *chaosState {
	if len(c.Kinds) == 0 {
		c.Kinds = ChaosKinds
	}
	h := fnv.New64a()
	h.Write([]byte(d))
	return &chaosState{c: c, salt: h.Sum64(), seen: map[uint64]uint64{}, drawn: map[ChaosKind]int64{}}
}

// spoil draws the fault of one call. A call not spoiled gets nil and keeps
// the server's Faults, base. A spoiled one gets its faults, keeping the
// pacing of base (its ChunkDelay) unless its fault is a stall; done is set
// when spoil answered the call itself (a reset).
func (cs *chaosState) spoil(x *exchange, base Faults) (spoiled *activeFaults, done bool) {
	h := fnv.New64a()
	h.Write([]byte(x.r.URL.Path))
	h.Write(x.body)
	key := h.Sum64()
	cs.mu.Lock()
	if len(cs.seen) >= maxSeenBodies {
		clear(cs.seen)
	}
	n := cs.seen[key]
	cs.seen[key] = n + 1
	cs.mu.Unlock()
	rng := rand.New(rand.NewPCG(cs.c.Seed^cs.salt, key+n*0x9e3779b97f4a7c15))
	if rng.Float64() >= cs.c.Rate {
		return nil, false
	}
	stream := x.req.Stream && x.parseErr == nil
	var kinds []ChaosKind
	for _, k := range cs.c.Kinds {
		if k.applies(x.wire(), stream) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil, false
	}
	k := kinds[rng.IntN(len(kinds))]
	cs.mu.Lock()
	cs.drawn[k]++
	cs.mu.Unlock()
	switch k {
	case ChaosReset:
		x.resetConnection()
		return nil, true
	case ChaosStallBody:
		x.w = &stallingWriter{ResponseWriter: x.w, ctx: x.r.Context(), stall: cs.c.Stall}
	}
	f := k.faults(rng, cs.c.Stall)
	if f.ChunkDelay == 0 {
		f.ChunkDelay = base.ChunkDelay
	}
	return &activeFaults{f: f}, false
}

// resetConnection aborts the call's connection with a TCP RST before any
// response byte, as an upstream whose process or load balancer dies does.
func (x *exchange) resetConnection() {
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: reset the stream instead
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST, not FIN
	}
	_ = conn.Close()
}

// stallingWriter holds a whole answer back halfway: the first write goes
// out in two halves, Stall apart.
type stallingWriter struct {
	http.ResponseWriter
	ctx     context.Context
	stall   time.Duration
	stalled bool
}

func (w *stallingWriter) Write(b []byte) (int, error) {
	if w.stalled || len(b) < 2 {
		return w.ResponseWriter.Write(b)
	}
	w.stalled = true
	n, err := w.ResponseWriter.Write(b[:len(b)/2])
	if err != nil {
		return n, err
	}
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err != nil {
		return n, err
	}
	if !sleepCtx(w.ctx, w.stall) {
		return n, w.ctx.Err()
	}
	m, err := w.ResponseWriter.Write(b[len(b)/2:])
	return n + m, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *stallingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// SetChaos replaces the server's Chaos; a zero Rate turns it off. The count
// of bodies seen restarts.
func (s *Server) SetChaos(c Chaos) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Rate == 0 {
		s.chaos.Store(nil)
		return nil
	}
	s.chaos.Store(newChaosState(c, s.dialect))
	return nil
}

// ChaosInjected counts the faults Chaos injected since it was set, by kind.
func (s *Server) ChaosInjected() map[ChaosKind]int64 {
	cs := s.chaos.Load()
	if cs == nil {
		return map[ChaosKind]int64{}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return maps.Clone(cs.drawn)
}
