package server

import (
	"context"
	"time"

	"github.com/pistra/pistra/runtime/metrics"
)

// health is what a scrape reads of the server: its ledger, its budget
// flushes and its breakers.
type health struct{ s *Server }

var _ metrics.Health = health{}

// scrapeLedgerWait bounds reading the ledger's membership for a scrape.
const scrapeLedgerWait = 200 * time.Millisecond

func (h health) Ledger() (metrics.Ledger, bool) {
	lh := h.s.opts.LedgerHealth
	if lh == nil {
		return metrics.Ledger{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeLedgerWait)
	defer cancel()
	st := lh.Status(ctx)
	l := metrics.Ledger{Ready: st.Ready, HasLeader: st.Leader != "", IsLeader: st.State == "Leader",
		Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
		LastContact: time.Duration(st.LastContactMS) * time.Millisecond}
	for _, m := range st.Servers {
		if m.Voter {
			l.Voters++
		}
	}
	return l, true
}

func (h health) Flushes() (bool, time.Time) { return h.s.budgets.Degraded(), h.s.budgets.LastFlush() }

func (h health) Circuits(dst []metrics.Circuit) []metrics.Circuit {
	for _, st := range h.s.circuits.Status(time.Now()) {
		dst = append(dst, metrics.Circuit{Provider: st.Provider, State: int(st.State)})
	}
	return dst
}
