// Package ledger keeps budget spend, the usage ledger's rows and
// suspensions durable and shared across a pistrad cluster, on hashicorp/raft with a BoltDB log and a
// file snapshot store. A Node is the budget.Ledger its gateway flushes to
// every 500 ms.
//
// Reads never wait on raft: they answer from the node's replica, so a
// request is never held up by the cluster, and a node without quorum
// keeps serving on its last known totals plus its own unflushed spend,
// which budget keeps while Add fails. Writes go to the leader: applied in
// place when this node leads, otherwise posted to the leader's internal
// endpoint over the cluster port (mutual TLS, then the cluster secret),
// with a bounded timeout; without a leader they fail at once.
//
// A flush is counted exactly once: one that timed out and is resent,
// merged into the next, is not counted twice if the first was applied
// after all (see FSM.applyBatch). Totals of windows long over are
// dropped (see Retention), so the state does not grow without bound.
package ledger

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/budget"
)

// ErrNoLeader is a write refused because this node knows no leader: the
// cluster has no quorum, or this node cannot reach it.
var ErrNoLeader = errors.New("ledger: no leader (no quorum)")

var _ budget.Ledger = (*Node)(nil)

// flusher is Add's state. Flushes are sent one at a time (budget's Gate
// serializes them too), each numbered in this process's session.
type flusher struct {
	mu        sync.Mutex
	session   string
	seq, base uint64
}

// newSession names this process's flushes: the node ID and a random
// suffix, since a restarted process starts numbering again.
func newSession(id string) string {
	var b [8]byte
	rand.Read(b[:])
	return id + "/" + hex.EncodeToString(b[:])
}

// Writable reports whether a write would be attempted now: this node
// knows a leader. Without one the budget gate serves degraded.
func (n *Node) Writable() bool {
	_, id := n.raft.LeaderWithID()
	return id != ""
}

var _ budget.Prober = (*Node)(nil)

// Read fills totals from this node's replica: no network, no raft.
func (n *Node) Read(keys []budget.Key, totals []uint64) error {
	n.fsm.read(keys, totals)
	return nil
}

// Totals lists the buckets of this node's replica that open reports true
// of: no network, no raft.
func (n *Node) Totals(open func(budget.Key) bool) ([]budget.Delta, error) {
	return n.fsm.openTotals(open), nil
}

// Usage lists the usage rows of day from this node's replica.
func (n *Node) Usage(day int64) ([]budget.UsageDelta, error) { return n.fsm.dayUsage(day), nil }

// Add writes one flush. On an error (no leader, no quorum, a timeout) the
// caller keeps the spend and sends it again merged into its next Add, as
// budget's Gate does; that resent spend is counted once, even if the
// failed flush was applied after all.
func (n *Node) Add(deltas []budget.Delta, usage []budget.UsageDelta) error {
	if len(deltas) == 0 && len(usage) == 0 {
		return nil
	}
	f := &n.flush
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	b := &batch{Session: f.session, Seq: f.seq, Base: f.base, At: time.Now().Unix(), Deltas: wireDeltas(deltas), Usage: wireUsages(usage)}
	if err := n.write(n.ctx, command{Batch: b}); err != nil {
		return err
	}
	f.base = f.seq
	return nil
}

// write commits c: in place on the leader, else through the leader's
// internal endpoint; either way within ApplyTimeout.
func (n *Node) write(ctx context.Context, c command) error {
	data, err := encode(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ApplyTimeout)
	defer cancel()
	if n.leads() {
		_, err := n.applyLocal(ctx, data)
		return err
	}
	idx, err := n.forwardAt(ctx, pathApply, data)
	if err != nil {
		return err
	}
	// The leader applied it; a read of this node's replica right after must
	// see it too, or a flush's re-read would count this node's own spend
	// as gone. Bounded by the write's deadline: past it the replica is
	// merely behind, and catches up on its own.
	if idx > 0 {
		_ = n.fsm.waitApplied(ctx, idx)
	}
	return nil
}

// applyLocal proposes data on this node, which leads, and waits for its
// commit until ctx ends. It returns the entry's index.
func (n *Node) applyLocal(ctx context.Context, data []byte) (uint64, error) {
	f := n.raft.Apply(data, remaining(ctx))
	if err := await(ctx, f); err != nil {
		return 0, fmt.Errorf("ledger: write: %w", err)
	}
	if err, ok := f.Response().(error); ok {
		return 0, err
	}
	return f.Index(), nil
}

// await waits for f until ctx ends. Raft's futures have no channel; the
// goroutine left behind on a timeout ends when raft resolves f, which it
// does on commit, on losing leadership or on shutdown.
func await(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("%w: %v", ErrNoLeader, err)
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// remaining is what is left of ctx's deadline, which every write's
// context has, for raft's own timeouts; never 0, which raft takes for
// no timeout at all.
func remaining(ctx context.Context) time.Duration {
	d, _ := ctx.Deadline()
	return max(time.Until(d), time.Millisecond)
}

// forward posts body to the leader's internal endpoint path, marked as
// forwarded so that it goes no further.
func (n *Node) forward(ctx context.Context, path string, body []byte) error {
	_, err := n.forwardAt(ctx, path, body)
	return err
}

// forwardAt is forward, reporting the index the leader applied a write
// at (0 when it names none).
func (n *Node) forwardAt(ctx context.Context, path string, body []byte) (uint64, error) {
	addr, _ := n.raft.LeaderWithID()
	if addr == "" || n.cfg.Cluster == nil {
		return 0, ErrNoLeader
	}
	return n.postAt(ctx, string(addr), path, body, true)
}

// post sends body to path on the node at addr, with the cluster secret.
func (n *Node) post(ctx context.Context, addr, path string, body []byte, forwarded bool) error {
	_, err := n.postAt(ctx, addr, path, body, forwarded)
	return err
}

// postAt is post, reporting the applied index the answer names.
func (n *Node) postAt(ctx context.Context, addr, path string, body []byte, forwarded bool) (uint64, error) {
	cl := n.cfg.Cluster
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.URL(addr, path), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set(secretHeader, n.cfg.Secret)
	if forwarded {
		req.Header.Set(forwardedHeader, "1")
	}
	resp, err := cl.Client().Do(req)
	if err != nil {
		return 0, fmt.Errorf("ledger: %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		idx, _ := strconv.ParseUint(resp.Header.Get(appliedHeader), 10, 64)
		return idx, nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	err = fmt.Errorf("ledger: %s answered %s: %s", addr, resp.Status, bytes.TrimSpace(msg))
	if resp.StatusCode == http.StatusMisdirectedRequest {
		err = fmt.Errorf("%w: %v", ErrNoLeader, err)
	}
	return 0, err
}
