package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// Join adds node id, reached at addr (its advertised cluster port), as a
// voter. It is the operator's step to bring in a node by hand; a node
// started with Config.Join asks for it itself. Any node takes it: a
// follower sends it on to the leader.
func (n *Node) Join(ctx context.Context, id, addr string) error {
	return n.change(ctx, member{ID: id, Addr: addr}, pathJoin, n.addVoter)
}

// Remove takes node id out of the cluster, so that it no longer counts
// towards a quorum: the step before replacing a node gone for good.
func (n *Node) Remove(ctx context.Context, id string) error {
	return n.change(ctx, member{ID: id}, pathRemove, n.removeServer)
}

// change applies a membership change on the leader, or sends it there.
func (n *Node) change(ctx context.Context, m member, path string, apply func(context.Context, member) error) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ApplyTimeout)
	defer cancel()
	if n.leads() {
		return apply(ctx, m)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return n.forward(ctx, path, body)
}

// addVoter adds m, or moves it to m.Addr when raft already knows its ID.
func (n *Node) addVoter(ctx context.Context, m member) error {
	if m.ID == "" || m.Addr == "" {
		return errors.New("ledger: join needs the node's ID and cluster address")
	}
	return await(ctx, n.raft.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.Addr), 0, remaining(ctx)))
}

func (n *Node) removeServer(ctx context.Context, m member) error {
	return await(ctx, n.raft.RemoveServer(raft.ServerID(m.ID), 0, remaining(ctx)))
}

// joinRetry is how often a node not yet admitted asks again.
const joinRetry = time.Second

// joinLoop asks each of Config.Join in turn to add this node, until one
// has or the node stops.
func (n *Node) joinLoop() {
	body, err := json.Marshal(member{ID: n.cfg.ID, Addr: n.cfg.Cluster.Advertise()})
	if err != nil {
		n.log.Error("ledger: join", "err", err)
		return
	}
	t := time.NewTicker(joinRetry)
	defer t.Stop()
	for {
		for _, addr := range n.cfg.Join {
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.ApplyTimeout)
			err := n.post(ctx, addr, pathJoin, body, false)
			cancel()
			if err == nil {
				n.log.Info("ledger: joined the cluster", "via", addr)
				return
			}
			n.log.Warn("ledger: join", "via", addr, "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}
