package ledger

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// The internal endpoint's paths, on the cluster port.
const (
	pathApply  = "/internal/v1/ledger/apply"
	pathJoin   = "/internal/v1/ledger/join"
	pathRemove = "/internal/v1/ledger/remove"
)

const (
	// secretHeader carries the cluster secret: the certificate says a
	// caller was issued by the cluster CA, the secret that it is meant to
	// write this cluster's ledger (one CA may serve several clusters).
	secretHeader = "X-Pistra-Cluster-Secret"
	// forwardedHeader marks a request a node sent on for another: it is
	// answered where it lands, never sent on again, so two nodes that
	// each think the other leads cannot pass it back and forth.
	forwardedHeader = "X-Pistra-Forwarded"
	// maxBody bounds a request: a flush of every open bucket fits many
	// times over.
	maxBody = 8 << 20
)

// handler is the internal endpoint: writes forwarded to the leader, and
// membership changes. It is served on the cluster port only, which the
// node owns, so it cannot be reached but through mutual TLS.
func (n *Node) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathApply, n.serveApply)
	mux.HandleFunc("POST "+pathJoin, n.serveMembership(n.addVoter))
	mux.HandleFunc("POST "+pathRemove, n.serveMembership(n.removeServer))
	want := sha256.Sum256([]byte(n.cfg.Secret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hashing first makes the compare constant-time in the length too.
		got := sha256.Sum256([]byte(r.Header.Get(secretHeader)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			n.log.Warn("ledger: internal request refused: wrong cluster secret", "remote", r.RemoteAddr, "path", r.URL.Path)
			http.Error(w, "wrong cluster secret", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// serveApply commits a write a follower forwarded: only the leader
// applies, so a node that no longer leads says so (421) and the sender
// retries with its next flush.
func (n *Node) serveApply(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if _, err := decode(data); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !n.leads() {
		http.Error(w, "not the leader", http.StatusMisdirectedRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), n.cfg.ApplyTimeout)
	defer cancel()
	idx, err := n.applyLocal(ctx, data)
	if err == nil {
		w.Header().Set(appliedHeader, strconv.FormatUint(idx, 10))
	}
	reply(w, err)
}

// appliedHeader carries, on a forwarded write's answer, the index the
// leader applied it at, for the follower to wait for before it reads.
const appliedHeader = "X-Pistra-Applied-Index"

// member names a node in a membership change.
type member struct {
	ID   string `json:"id"`
	Addr string `json:"addr,omitempty"`
}

// serveMembership applies a membership change on the leader, or sends it
// on to the leader when it came straight from a node or an operator that
// did not know which node leads.
func (n *Node) serveMembership(apply func(context.Context, member) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var m member
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&m); err != nil || m.ID == "" {
			http.Error(w, "want {\"id\": ..., \"addr\": ...}", http.StatusBadRequest)
			return
		}
		if !n.leads() && r.Header.Get(forwardedHeader) != "" {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		reply(w, n.change(r.Context(), m, r.URL.Path, apply))
	}
}

func reply(w http.ResponseWriter, err error) {
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, ErrNoLeader):
		http.Error(w, err.Error(), http.StatusMisdirectedRequest)
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}
