package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is what a suspension stops.
type Kind string

const (
	KindKey      Kind = "key"      // a client key: its requests are refused
	KindProvider Kind = "provider" // a provider: its candidates are passed over
	KindRule     Kind = "rule"     // an access rule: it is not evaluated
)

// SuspensionID names what is suspended.
type SuspensionID struct {
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
}

func (id SuspensionID) validate() error {
	switch id.Kind {
	case KindKey, KindProvider, KindRule:
	default:
		return fmt.Errorf("ledger: suspension kind %q: want key, provider or rule", id.Kind)
	}
	if id.Name == "" {
		return fmt.Errorf("ledger: a %s suspension needs a name", id.Kind)
	}
	return nil
}

// Suspension is one durable suspension, as set on one node and seen on
// all.
type Suspension struct {
	Kind   Kind      `json:"kind"`
	Name   string    `json:"name"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Node   string    `json:"node"` // the ID of the node it was set on
}

func (s Suspension) id() SuspensionID { return SuspensionID{Kind: s.Kind, Name: s.Name} }

// SetSuspension suspends s.Kind s.Name for s.Reason, from now, as set on
// this node (Since and Node are filled in); setting it again replaces
// it. Like Add it is committed through the leader, and fails without one.
func (n *Node) SetSuspension(ctx context.Context, s Suspension) error {
	s.Since, s.Node = time.Now().UTC(), n.cfg.ID
	if err := s.id().validate(); err != nil {
		return err
	}
	return n.write(ctx, command{Suspend: &s})
}

// ClearSuspension lifts the suspension of kind name, if there is one.
func (n *Node) ClearSuspension(ctx context.Context, kind Kind, name string) error {
	id := SuspensionID{Kind: kind, Name: name}
	if err := id.validate(); err != nil {
		return err
	}
	return n.write(ctx, command{Clear: &id})
}

// Suspended reports the suspension of kind name from this node's replica,
// for enforcement on the request path: no network, no raft.
func (n *Node) Suspended(kind Kind, name string) (Suspension, bool) {
	return n.fsm.suspended(SuspensionID{Kind: kind, Name: name})
}

// Suspensions lists every suspension in this node's replica, by kind and
// name.
func (n *Node) Suspensions() []Suspension { return n.fsm.listSuspensions() }

func sortSuspensions(s []Suspension) {
	slices.SortFunc(s, func(a, b Suspension) int {
		return cmp.Or(strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Name, b.Name))
	})
}
