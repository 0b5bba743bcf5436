package server

import (
	"context"
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
)

// readyz reports ready once a snapshot serves and the ledger's replica has
// caught up with what its directory held. A ledger without a leader keeps
// the node ready (it serves on its last known totals) but says so.
func (s *Server) readyz(w http.ResponseWriter) {
	if !s.ready.Load() || s.snap.Load() == nil {
		writePlain(w, http.StatusServiceUnavailable, "not ready\n")
		return
	}
	h := s.opts.LedgerHealth
	if h == nil {
		writePlain(w, http.StatusOK, "ready\n")
		return
	}
	if !s.ledgerReady() {
		writePlain(w, http.StatusServiceUnavailable, "not ready: the ledger is still replaying its log\n")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if h.Status(ctx).Leader == "" {
		writePlain(w, http.StatusOK, "ready; ledger degraded: no leader, budgets held on the last known totals\n")
		return
	}
	writePlain(w, http.StatusOK, "ready\n")
}

// checkLedger refuses traffic while the ledger is not ready: an empty
// replica knows no suspension and no spend, and serving on it would ignore
// both.
func (s *Server) checkLedger() *dialect.Error {
	if s.ledgerReady() {
		return nil
	}
	return dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeNotReady,
		"the budget ledger is still replaying its log; try another node or again shortly")
}

// ledgerReady reports whether the ledger, if any, has replayed what its
// directory held and holds something: a node that never joined its
// cluster has an empty replica, which knows no spend and no suspension.
func (s *Server) ledgerReady() bool {
	h := s.opts.LedgerHealth
	if h == nil {
		return true
	}
	select {
	case <-h.Ready():
		return h.HasState()
	default:
		return false
	}
}

func writePlain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
