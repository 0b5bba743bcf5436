package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/suspend"
)

var _ suspend.Store = (*Node)(nil)

// wireSuspension is suspend.Suspension as stored: the log's encoding is
// this package's, not whatever suspend's field names become. Its fields
// are suspend.Suspension's, so each converts to the other.
type wireSuspension struct {
	Kind   suspend.Kind `json:"kind"`
	Name   string       `json:"name"`
	Reason string       `json:"reason"`
	Since  time.Time    `json:"since"`
	Node   string       `json:"node"` // the ID of the node it was set on
}

// suspensionID names what is suspended, as stored.
type suspensionID struct {
	Kind suspend.Kind `json:"kind"`
	Name string       `json:"name"`
}

func (id suspensionID) validate() error {
	if err := suspend.Valid(id.Kind, id.Name); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

func (s wireSuspension) id() suspensionID { return suspensionID{Kind: s.Kind, Name: s.Name} }

// SetSuspension suspends s.Kind s.Name for s.Reason, from now, as set on
// this node (Since and Node are filled in); setting it again replaces
// it. Like Add it is committed through the leader, and fails without one.
func (n *Node) SetSuspension(ctx context.Context, s suspend.Suspension) error {
	w := wireSuspension(s)
	w.Since, w.Node = time.Now().UTC(), n.cfg.ID
	if err := w.id().validate(); err != nil {
		return err
	}
	return n.write(ctx, command{Suspend: &w})
}

// ClearSuspension lifts the suspension of kind name, if there is one.
func (n *Node) ClearSuspension(ctx context.Context, kind suspend.Kind, name string) error {
	id := suspensionID{Kind: kind, Name: name}
	if err := id.validate(); err != nil {
		return err
	}
	return n.write(ctx, command{Clear: &id})
}

// Suspended reports the suspension of kind name from this node's replica,
// for enforcement on the request path: no network, no raft.
func (n *Node) Suspended(kind suspend.Kind, name string) (suspend.Suspension, bool) {
	s, ok := n.fsm.suspended(suspensionID{Kind: kind, Name: name})
	return suspend.Suspension(s), ok
}

// Suspensions lists every suspension in this node's replica, by kind and
// name.
func (n *Node) Suspensions() []suspend.Suspension {
	list := n.fsm.listSuspensions()
	out := make([]suspend.Suspension, len(list))
	for i, s := range list {
		out[i] = suspend.Suspension(s)
	}
	return out
}

// SuspensionGeneration moves whenever this node's replica applies a
// change of suspensions (or a snapshot).
func (n *Node) SuspensionGeneration() uint64 { return n.fsm.suspGen.Load() }

func sortSuspensions(s []wireSuspension) {
	slices.SortFunc(s, func(a, b wireSuspension) int {
		return cmp.Or(strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Name, b.Name))
	})
}
