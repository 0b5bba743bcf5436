package pool

import (
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Status is one pooled provider as the admin status shows it.
type Status struct {
	Provider string `json:"provider"`
	Pool     string `json:"pool"`
	// Picker is the endpoint picker's address, empty without one (the
	// members are then used in turn); PickerFailure says what a picker
	// failure does (closed or open), PickerError why its client could not
	// be opened.
	Picker        string             `json:"picker,omitempty"`
	PickerFailure plan.PickerFailure `json:"picker_failure,omitempty"`
	PickerError   string             `json:"picker_error,omitempty"`
	MemberSet
	Subsets []SubsetStatus `json:"subsets,omitempty"`
}

// SubsetStatus is one subset's member set.
type SubsetStatus struct {
	Name string `json:"name"`
	MemberSet
}

// MemberSet is a DNS name's members as last resolved.
type MemberSet struct {
	DNS     string   `json:"dns"`
	Members []string `json:"members"`
	// ResolvedAt is when DNS last answered for the set (absent for one
	// never resolved and for an address literal, a fixed set), and
	// AgeSeconds how long ago that was (for a set never resolved, how long
	// it has been waited for).
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	AgeSeconds float64    `json:"age_seconds"`
	// NextResolve is how long after the last attempt the next is made:
	// the records' TTL within the bounds, or a failure's backoff.
	NextResolve string `json:"next_resolve,omitempty"`
	// LastError is why the last resolution failed (the set shown is the
	// last good one); empty when it succeeded.
	LastError string `json:"last_error,omitempty"`
}

// Status reads every pooled provider of the graph last loaded, in the
// order of its providers.
func (s *Set) Status(now time.Time) []Status {
	l := s.serving.Load()
	if l == nil {
		return nil
	}
	var out []Status
	for _, t := range l.targets {
		if t == nil {
			continue
		}
		st := Status{Provider: t.provider, Pool: t.pool.Name, MemberSet: t.all.status(now)}
		if t.picker != nil {
			st.Picker, st.PickerFailure = t.pool.Picker, plan.PickerFailClosed
			if t.failOpen {
				st.PickerFailure = plan.PickerFailOpen
			}
			if t.picker.err != nil {
				st.PickerError = t.picker.err.Error()
			}
		}
		for _, sub := range t.pool.Subsets {
			st.Subsets = append(st.Subsets, SubsetStatus{Name: sub.Name, MemberSet: t.subsets[sub.Name].status(now)})
		}
		out = append(out, st)
	}
	return out
}

func (w *watcher) status(now time.Time) MemberSet {
	m := w.cur.Load()
	ms := MemberSet{DNS: w.name, Members: m.names, AgeSeconds: w.age(m, now).Seconds()}
	if ms.Members == nil {
		ms.Members = []string{}
	}
	if w.resolving && !m.resolved.IsZero() {
		at := m.resolved.UTC()
		ms.ResolvedAt = &at
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ms.LastError = w.lastErr
	if w.interval > 0 {
		ms.NextResolve = w.interval.String()
	}
	return ms
}

// age is how long ago m resolved (for a set never resolved, how long it
// has been watched); 0 for a fixed set.
func (w *watcher) age(m *members, now time.Time) time.Duration {
	switch {
	case !w.resolving:
		return 0
	case m.resolved.IsZero():
		return now.Sub(w.since)
	}
	return now.Sub(m.resolved)
}
