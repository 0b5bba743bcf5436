package fakeprovider

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
)

// Faults are the misbehaviours a server injects into API calls; the zero
// value injects none. In JSON (flags, the control endpoint) durations are
// strings such as "250ms".
type Faults struct {
	// FailStatus, when set (400..599), is answered to the first FailCount
	// calls after the faults were set, with a body in the dialect's error
	// shape. FailCount <= 0 fails every call.
	FailStatus int
	FailCount  int
	// RetryAfter is sent with injected failures as retry-after (whole
	// seconds, rounded up) and retry-after-ms; 429s default to one second.
	RetryAfter time.Duration
	// FirstByteDelay holds every response back before its first byte.
	FirstByteDelay time.Duration
	// ChunkDelay is waited between stream events.
	ChunkDelay time.Duration
	// CutAfter, when set, drops the connection after that many stream events.
	CutAfter int
	// Break, when set, spoils the first BreakCount answers of its kind
	// after the faults were set (see Break); BreakCount <= 0 spoils every
	// one. Calls answered with FailStatus are not of any kind.
	Break      Break
	BreakCount int
}

type faultsJSON struct {
	FailStatus     int    `json:"fail_status"`
	FailCount      int    `json:"fail_count"`
	RetryAfter     string `json:"retry_after"`
	FirstByteDelay string `json:"first_byte_delay"`
	ChunkDelay     string `json:"chunk_delay"`
	CutAfter       int    `json:"cut_after"`
	Break          Break  `json:"break,omitempty"`
	BreakCount     int    `json:"break_count,omitempty"`
}

// MarshalJSON writes durations as Go duration strings.
func (f Faults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{
		FailStatus:     f.FailStatus,
		FailCount:      f.FailCount,
		RetryAfter:     f.RetryAfter.String(),
		FirstByteDelay: f.FirstByteDelay.String(),
		ChunkDelay:     f.ChunkDelay.String(),
		CutAfter:       f.CutAfter,
		Break:          f.Break,
		BreakCount:     f.BreakCount,
	})
}

// UnmarshalJSON reads durations as Go duration strings; absent ones are zero.
func (f *Faults) UnmarshalJSON(data []byte) error {
	var j faultsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	parsed := Faults{FailStatus: j.FailStatus, FailCount: j.FailCount, CutAfter: j.CutAfter, Break: j.Break, BreakCount: j.BreakCount}
	for _, d := range []struct {
		name string
		text string
		into *time.Duration
	}{
		{"retry_after", j.RetryAfter, &parsed.RetryAfter},
		{"first_byte_delay", j.FirstByteDelay, &parsed.FirstByteDelay},
		{"chunk_delay", j.ChunkDelay, &parsed.ChunkDelay},
	} {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil {
			return fmt.Errorf("faults: %s: %w", d.name, err)
		}
		*d.into = v
	}
	*f = parsed
	return nil
}

// Validate reports knobs that make no sense.
func (f Faults) Validate() error {
	switch {
	case f.FailStatus != 0 && (f.FailStatus < 400 || f.FailStatus > 599):
		return fmt.Errorf("faults: fail status %d is not an error status (400..599)", f.FailStatus)
	case f.RetryAfter < 0 || f.FirstByteDelay < 0 || f.ChunkDelay < 0:
		return fmt.Errorf("faults: delays must not be negative")
	case f.CutAfter < 0:
		return fmt.Errorf("faults: cut after %d events: must not be negative", f.CutAfter)
	case f.Break < BreakNone || f.Break > BreakMidError:
		return fmt.Errorf("faults: unknown break %d", int(f.Break))
	}
	return nil
}

// faultState holds the current faults and how many failures they injected;
// lock-free, since every call reads it.
type faultState struct {
	cur atomic.Pointer[activeFaults]
}

type activeFaults struct {
	f        Faults
	injected atomic.Int64
	broken   atomic.Int64 // answers Break was considered for, see breakFor
}

func (fs *faultState) set(f Faults) { fs.cur.Store(&activeFaults{f: f}) }

func (fs *faultState) get() Faults {
	if a := fs.cur.Load(); a != nil {
		return a.f
	}
	return Faults{}
}

// take returns the faults for one call and whether the call must fail.
// The call's answer asks a (which may be nil) whether it breaks.
func (fs *faultState) take() (a *activeFaults, fail bool) {
	a = fs.cur.Load()
	if a == nil || a.f.FailStatus == 0 {
		return a, false
	}
	return a, a.f.FailCount <= 0 || a.injected.Add(1) <= int64(a.f.FailCount)
}

// faults is a's faults; none when a is nil.
func (a *activeFaults) faults() Faults {
	if a == nil {
		return Faults{}
	}
	return a.f
}
