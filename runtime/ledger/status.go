package ledger

import (
	"context"

	"github.com/hashicorp/raft"
)

// What a server needs from the ledger beyond budget.Ledger, proposed as
// interfaces here rather than added to budget's: a Node satisfies both.
var (
	_ Suspender = (*Node)(nil)
	_ Health    = (*Node)(nil)
)

// Suspender keeps suspensions durable: set and cleared on any node,
// looked up on the request path from the local replica.
type Suspender interface {
	SetSuspension(ctx context.Context, s Suspension) error
	ClearSuspension(ctx context.Context, kind Kind, name string) error
	Suspended(kind Kind, name string) (Suspension, bool)
	Suspensions() []Suspension
}

// Health is the ledger's degraded signal: a node with no leader keeps
// answering reads from its replica, but the totals stop moving and
// writes fail, which readiness and the admin API should show.
type Health interface {
	Ready() <-chan struct{}
	// HasState reports whether the node holds any of the ledger, or knows
	// a leader to get it from: a node that never joined has neither.
	HasState() bool
	Status(ctx context.Context) Status
}

// Status is one node's view of the ledger.
type Status struct {
	ID    string `json:"id"`
	State string `json:"state"` // Leader, Follower, Candidate or Shutdown
	// Leader is the leader's ID; empty when none is known, and then the
	// node is degraded: it serves its last known totals and keeps its
	// spend unflushed.
	Leader       string   `json:"leader,omitempty"`
	Ready        bool     `json:"ready"`
	AppliedIndex uint64   `json:"applied_index"`
	Servers      []Server `json:"servers,omitempty"`
}

// Server is one member of raft's configuration.
type Server struct {
	ID    string `json:"id"`
	Addr  string `json:"addr"`
	Voter bool   `json:"voter"`
}

// Status reports this node's view; the membership is read from raft, for
// as long as ctx allows.
func (n *Node) Status(ctx context.Context) Status {
	_, leader := n.raft.LeaderWithID()
	s := Status{ID: n.cfg.ID, State: n.raft.State().String(), Leader: string(leader), AppliedIndex: n.raft.AppliedIndex()}
	select {
	case <-n.ready:
		s.Ready = true
	default:
	}
	f := n.raft.GetConfiguration()
	if await(ctx, f) == nil {
		for _, srv := range f.Configuration().Servers {
			s.Servers = append(s.Servers, Server{ID: string(srv.ID), Addr: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
		}
	}
	return s
}

// HasState reports whether this node has applied any of the log or knows
// a leader: cheap enough for every request.
func (n *Node) HasState() bool { return n.raft.AppliedIndex() > 0 || n.Writable() }

func (n *Node) leads() bool { return n.raft.State() == raft.Leader }
