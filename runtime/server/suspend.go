package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/ledger"
	"github.com/pistra/pistra/runtime/plan"
)

// Suspensions are where operators' suspensions of keys, providers and
// rules live (the ledger, durable and shared across the cluster); every
// node reads them from its own replica.
type Suspensions = ledger.Suspender

// ReasonProviderSuspended labels a candidate passed over because its
// provider is suspended.
const ReasonProviderSuspended = "provider_suspended"

// suspensionGate refuses the candidates of suspended providers: the whole
// request when the provider is its primary (a suspended provider is not
// quietly replaced by its failover list), else just the candidate.
type suspensionGate struct{ s Suspensions }

var _ admission.Gate = suspensionGate{}

func (g suspensionGate) Admit(r *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	name := r.Snapshot.Graph.Providers[c.Provider].Name
	s, ok := g.s.Suspended(ledger.KindProvider, name)
	if !ok {
		return admission.NothingHeld, nil
	}
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeProviderSuspended,
		"provider %q is suspended: %s", name, cmp.Or(s.Reason, "no reason given"))
	// x-should-retry: false: a suspension stands until an operator lifts
	// it, and an SDK's retries within seconds would only be refused again.
	e.Final = true
	return nil, &admission.Refusal{Reason: ReasonProviderSuspended, Final: c.Primary, Error: e}
}

// keySuspended refuses a suspended key.
func (s *Server) keySuspended(name string) *dialect.Error {
	if s.opts.Suspensions == nil {
		return nil
	}
	sus, ok := s.opts.Suspensions.Suspended(ledger.KindKey, name)
	if !ok {
		return nil
	}
	return dialect.Errorf(http.StatusForbidden, dialect.CodeKeySuspended, "the API key is suspended: %s",
		cmp.Or(sus.Reason, "no reason given"))
}

// ErrNoSuspensions is returned by the suspension calls of a gateway
// without a ledger.
var ErrNoSuspensions = fmt.Errorf("%w: suspensions need a ledger: start pistrad with -ledger-dir", admin.ErrBadRequest)

// ErrUnknownSuspension is wrapped for a kind or name the policy does not
// declare.
var ErrUnknownSuspension = fmt.Errorf("%w: nothing to suspend by that name", admin.ErrBadRequest)

// Suspend records a suspension after checking that the policy declares
// what it names.
func (s *Server) Suspend(ctx context.Context, sus ledger.Suspension) error {
	if s.opts.Suspensions == nil {
		return ErrNoSuspensions
	}
	if err := s.checkSuspendable(sus.Kind, sus.Name); err != nil {
		return err
	}
	return s.opts.Suspensions.SetSuspension(ctx, sus)
}

// Unsuspend clears a suspension.
func (s *Server) Unsuspend(ctx context.Context, kind ledger.Kind, name string) error {
	if s.opts.Suspensions == nil {
		return ErrNoSuspensions
	}
	if err := s.checkSuspendable(kind, name); err != nil {
		return err
	}
	return s.opts.Suspensions.ClearSuspension(ctx, kind, name)
}

// ListSuspensions lists every suspension in force.
func (s *Server) ListSuspensions() ([]ledger.Suspension, error) {
	if s.opts.Suspensions == nil {
		return nil, ErrNoSuspensions
	}
	return s.opts.Suspensions.Suspensions(), nil
}

// checkSuspendable refuses a kind that does not exist or a name the
// serving policy does not declare, naming what does.
func (s *Server) checkSuspendable(kind ledger.Kind, name string) error {
	g := s.snap.Load().Graph
	var names []string
	switch kind {
	case ledger.KindKey:
		for _, k := range g.Keys {
			names = append(names, k.Name)
		}
	case ledger.KindProvider:
		for _, p := range g.Providers {
			names = append(names, p.Name)
		}
	case ledger.KindRule:
		names = ruleNames(g)
	default:
		return fmt.Errorf("%w: kind %q is not one of key, provider, rule", ErrUnknownSuspension, kind)
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("%w: the policy declares no %s %q (it declares: %s)", ErrUnknownSuspension, kind, name, strings.Join(names, ", "))
	}
	return nil
}

// ruleNames lists the access rules of the deployment and every profile.
func ruleNames(g *plan.Graph) []string {
	var names []string
	add := func(rs []plan.Rule) {
		for _, r := range rs {
			if !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	add(g.Rules)
	for _, p := range g.Profiles {
		add(p.Rules)
	}
	return names
}

// Members adds and removes ledger cluster members; any node forwards the
// change to the leader.
type Members interface {
	Join(ctx context.Context, id, addr string) error
	Remove(ctx context.Context, id string) error
}

var _ Members = (*ledger.Node)(nil)

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
