package ledger

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/admin"
)

// Status reports this node's view, in the admin status's terms; the
// membership is read from raft, for as long as ctx allows.
func (n *Node) Status(ctx context.Context) admin.LedgerStatus {
	_, leader := n.raft.LeaderWithID()
	s := admin.LedgerStatus{ID: n.cfg.ID, State: n.raft.State().String(), Leader: string(leader), AppliedIndex: n.raft.AppliedIndex(),
		Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex()}
	if last := n.raft.LastContact(); !last.IsZero() && !n.leads() {
		s.LastContactMS = time.Since(last).Milliseconds()
	}
	select {
	case <-n.ready:
		s.Ready = true
	default:
	}
	f := n.raft.GetConfiguration()
	if await(ctx, f) == nil {
		for _, srv := range f.Configuration().Servers {
			s.Servers = append(s.Servers, admin.LedgerMember{ID: string(srv.ID), Addr: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
		}
	}
	return s
}

// HasState reports whether this node has applied any of the log or knows
// a leader: cheap enough for every request.
func (n *Node) HasState() bool { return n.raft.AppliedIndex() > 0 || n.Writable() }

func (n *Node) leads() bool { return n.raft.State() == raft.Leader }
