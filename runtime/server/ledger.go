package server

import (
	"context"
	"fmt"

	"github.com/pistra/pistra/runtime/admin"
)

// What the server needs of a durable ledger beyond budget.Ledger (spend)
// and suspend.Store (suspensions), declared here where it is used: the
// raft ledger satisfies them, and only pistrad's main wires it in.

// LedgerHealth is the ledger's degraded signal: a node with no leader
// keeps answering reads from its replica, but the totals stop moving and
// writes fail, which readiness and the admin status show.
type LedgerHealth interface {
	// Ready is closed once the node has replayed what its directory held.
	Ready() <-chan struct{}
	// HasState reports whether the node holds any of the ledger, or knows
	// a leader to get it from: a node that never joined has neither.
	HasState() bool
	// Status is the node's view, membership read for as long as ctx
	// allows.
	Status(ctx context.Context) admin.LedgerStatus
}

// Members adds and removes ledger cluster members; any node forwards the
// change to the leader.
type Members interface {
	Join(ctx context.Context, id, addr string) error
	Remove(ctx context.Context, id string) error
}

// ErrNoCluster is returned by the membership calls of a gateway without a
// cluster ledger.
var ErrNoCluster = fmt.Errorf("%w: membership needs a cluster ledger (-raft-listen)", admin.ErrBadRequest)

// JoinNode adds node id, reachable at addr, to the ledger cluster.
func (s *Server) JoinNode(ctx context.Context, id, addr string) error {
	if s.opts.Members == nil {
		return ErrNoCluster
	}
	if id == "" || addr == "" {
		return fmt.Errorf("%w: a member needs an id and an address", admin.ErrBadRequest)
	}
	return s.opts.Members.Join(ctx, id, addr)
}

// RemoveNode removes node id from the ledger cluster.
func (s *Server) RemoveNode(ctx context.Context, id string) error {
	if s.opts.Members == nil {
		return ErrNoCluster
	}
	return s.opts.Members.Remove(ctx, id)
}
