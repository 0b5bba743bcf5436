package ledger

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/budget"
)

// persisted is the FSM as a snapshot holds it, after the format byte:
// every list sorted, so equal states write equal bytes.
type persisted struct {
	Index  uint64      `json:"index"`
	Totals []wireDelta `json:"totals"`
	// Usage is absent from snapshots older than the usage ledger.
	Usage       []wireUsage        `json:"usage,omitempty"`
	Suspensions []wireSuspension   `json:"suspensions"`
	Sessions    []persistedSession `json:"sessions"`
}

type persistedSession struct {
	ID      string      `json:"id"`
	Last    uint64      `json:"last"`
	Base    uint64      `json:"base"`
	Seen    int64       `json:"seen"`
	Covered []wireDelta `json:"covered"`
	// CoveredUsage is absent from snapshots older than the usage ledger.
	CoveredUsage []wireUsage `json:"covered_usage,omitempty"`
}

// fsmSnapshot is a copy of the state taken under the FSM's lock, so raft
// can go on applying while it is written.
type fsmSnapshot struct {
	index       uint64
	totals      map[budget.Key]uint64
	usage       map[budget.UsageKey]budget.UsageCounts
	suspensions map[suspensionID]wireSuspension
	sessions    map[string]session
}

// Snapshot copies the state; a session's covered maps are never changed
// once set, only replaced, so the copy may share them.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := &fsmSnapshot{index: f.index, totals: maps.Clone(f.totals), usage: maps.Clone(f.usage), suspensions: maps.Clone(f.suspensions), sessions: make(map[string]session, len(f.sessions))}
	for id, ss := range f.sessions {
		s.sessions[id] = *ss
	}
	return s, nil
}

// Persist writes the snapshot; on any error the sink is cancelled, so a
// partial snapshot is never taken for a whole one.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriter(sink)
	err := w.WriteByte(formatV1)
	if err == nil {
		err = json.NewEncoder(w).Encode(s.persisted())
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("ledger snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

func (s *fsmSnapshot) persisted() persisted {
	p := persisted{Index: s.index, Totals: sortedDeltas(s.totals), Usage: sortedUsage(s.usage), Suspensions: slices.Collect(maps.Values(s.suspensions))}
	sortSuspensions(p.Suspensions)
	for _, id := range slices.Sorted(maps.Keys(s.sessions)) {
		ss := s.sessions[id]
		p.Sessions = append(p.Sessions, persistedSession{ID: id, Last: ss.last, Base: ss.base, Seen: ss.seen,
			Covered: sortedDeltas(ss.covered), CoveredUsage: sortedUsage(ss.coveredUsage)})
	}
	return p
}

// Restore replaces the whole state with the snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := bufio.NewReader(rc)
	if v, err := r.ReadByte(); err != nil || v != formatV1 {
		return fmt.Errorf("ledger snapshot: unknown format (%d, %v)", v, err)
	}
	var p persisted
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return fmt.Errorf("ledger snapshot: %w", err)
	}
	totals, suspensions, sessions := deltaMap(p.Totals), make(map[suspensionID]wireSuspension, len(p.Suspensions)), make(map[string]*session, len(p.Sessions))
	for _, s := range p.Suspensions {
		suspensions[s.id()] = s
	}
	for _, s := range p.Sessions {
		sessions[s.ID] = &session{last: s.Last, base: s.Base, seen: s.Seen, covered: deltaMap(s.Covered), coveredUsage: usageMap(s.CoveredUsage)}
	}
	f.mu.Lock()
	f.totals, f.usage, f.suspensions, f.sessions = totals, usageMap(p.Usage), suspensions, sessions
	f.suspGen.Add(1)
	f.advance(p.Index)
	f.mu.Unlock()
	return nil
}

func sortedDeltas(m map[budget.Key]uint64) []wireDelta {
	out := make([]wireDelta, 0, len(m))
	for k, n := range m {
		out = append(out, wireDelta{Budget: k.Budget, Bucket: k.Bucket, Period: k.Period, Window: k.Window, Spent: n})
	}
	slices.SortFunc(out, func(a, b wireDelta) int {
		return cmp.Or(strings.Compare(a.Budget, b.Budget), strings.Compare(a.Bucket, b.Bucket),
			strings.Compare(string(a.Period), string(b.Period)), cmp.Compare(a.Window, b.Window))
	})
	return out
}

func deltaMap(ds []wireDelta) map[budget.Key]uint64 {
	m := make(map[budget.Key]uint64, len(ds))
	for _, d := range ds {
		m[d.key()] = d.Spent
	}
	return m
}

func sortedUsage(m map[budget.UsageKey]budget.UsageCounts) []wireUsage {
	rows := make([]budget.UsageDelta, 0, len(m))
	for k, c := range m {
		rows = append(rows, budget.UsageDelta{Key: k, Counts: c})
	}
	budget.SortUsage(rows)
	return wireUsages(rows)
}

func usageMap(us []wireUsage) map[budget.UsageKey]budget.UsageCounts {
	m := make(map[budget.UsageKey]budget.UsageCounts, len(us))
	for _, u := range us {
		m[u.key()] = u.counts()
	}
	return m
}
