package server

import (
	"context"
	"fmt"

	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/suspend"
)

// ErrNoSuspensions is returned by the suspension calls of a gateway
// without a ledger.
var ErrNoSuspensions = fmt.Errorf("%w: suspensions need a ledger: start pistrad with -ledger-dir", admin.ErrBadRequest)

// Suspend records a suspension after checking that the policy declares
// what it names.
func (s *Server) Suspend(ctx context.Context, sus suspend.Suspension) error {
	if s.opts.Suspensions == nil {
		return ErrNoSuspensions
	}
	if err := s.checkSuspendable(sus.Kind, sus.Name); err != nil {
		return err
	}
	return s.opts.Suspensions.SetSuspension(ctx, sus)
}

// Unsuspend clears a suspension.
func (s *Server) Unsuspend(ctx context.Context, kind suspend.Kind, name string) error {
	if s.opts.Suspensions == nil {
		return ErrNoSuspensions
	}
	if err := s.checkSuspendable(kind, name); err != nil {
		return err
	}
	return s.opts.Suspensions.ClearSuspension(ctx, kind, name)
}

// ListSuspensions lists every suspension in force.
func (s *Server) ListSuspensions() ([]suspend.Suspension, error) {
	if s.opts.Suspensions == nil {
		return nil, ErrNoSuspensions
	}
	return s.opts.Suspensions.Suspensions(), nil
}

// checkSuspendable refuses, as the caller's to fix, a kind or name the
// serving policy does not declare.
func (s *Server) checkSuspendable(kind suspend.Kind, name string) error {
	if err := suspend.Declared(s.snap.Load().Graph, kind, name); err != nil {
		return fmt.Errorf("%w: %w", admin.ErrBadRequest, err)
	}
	return nil
}
