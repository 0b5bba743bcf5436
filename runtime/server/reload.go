package server

import (
	"context"
	"fmt"
	"github.com/pistra/pistra/runtime/budget"
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/catalog"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/snapshot"
	"github.com/pistra/pistra/runtime/upstream"
)

var _ admin.Controller = (*Server)(nil)

// loadSnapshot runs the loader and validates what it produced.
func (s *Server) loadSnapshot() (*snapshot.Snapshot, error) {
	g, source, err := s.opts.Load()
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	if err := s.checkSignature(g); err != nil {
		return nil, fmt.Errorf("policy from %s: %w", source, err)
	}
	snap, err := snapshot.New(g, source, s.opts.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("policy from %s: %w", source, err)
	}
	for i := range snap.Upstreams {
		if up := &snap.Upstreams[i]; up.TLS != nil {
			up.Transport = proxy.NewTLSTransport(s.opts.Transport, up.TLS)
		}
	}
	for _, svcs := range [][]upstream.Service{snap.MCPServers, snap.Agents} {
		for i := range svcs {
			if svc := &svcs[i]; svc.TLS != nil {
				svc.Transport = proxy.NewTLSTransport(s.opts.Transport, svc.TLS)
			}
		}
	}
	// Last, once g passed every check: its breakers and member sets are
	// those requests find.
	s.circuits.Load(g)
	s.pools.Load(g)
	return snap, nil
}

// closeIdle closes the idle connections the retired snapshot old leaves:
// all those of its own transports, and the shared transport's to hosts
// the serving snapshot cur no longer sends to. Those still carrying a
// request close once idle for the transport's idle timeout.
func (s *Server) closeIdle(old, cur *snapshot.Snapshot) {
	closers := make([]http.RoundTripper, 0, len(old.Upstreams))
	for i := range old.Upstreams {
		closers = append(closers, old.Upstreams[i].Transport)
	}
	for _, svcs := range [][]upstream.Service{old.MCPServers, old.Agents} {
		for i := range svcs {
			closers = append(closers, svcs[i].Transport)
		}
	}
	for _, rt := range closers {
		if t, ok := rt.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	}
	t, ok := s.opts.Upstream.(interface{ CloseIdleConnectionsTo(hosts []string) })
	if !ok {
		return
	}
	kept := hosts(cur)
	var dropped []string
	for h := range hosts(old) {
		if !kept[h] {
			dropped = append(dropped, h)
		}
	}
	t.CloseIdleConnectionsTo(dropped)
}

func hosts(snap *snapshot.Snapshot) map[string]bool {
	set := map[string]bool{}
	for i := range snap.Upstreams {
		snap.Upstreams[i].Hosts(set)
	}
	for _, svcs := range [][]upstream.Service{snap.MCPServers, snap.Agents} {
		for i := range svcs {
			svcs[i].Hosts(set)
		}
	}
	return set
}

// Reload builds a new snapshot and swaps it in. A bundle that fails any
// check is refused and logged, and the active snapshot keeps serving.
// Requests already running finish on the snapshot they started with.
// changed is whether the new bundle's source hash or digest differs from
// the one it replaced.
func (s *Server) Reload() (changed bool, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	snap, err := s.loadSnapshot()
	s.metrics.Reload(err == nil)
	if err != nil {
		s.lastReloadErr = err.Error()
		s.log.Error("reload refused; the active snapshot keeps serving", "error", err)
		return false, err
	}
	s.lastReloadErr = ""
	old := s.snap.Swap(snap)
	s.closeIdle(old, snap)
	changed = snap.Graph.SourceHash != old.Graph.SourceHash || snap.Graph.Digest != old.Graph.Digest
	s.log.Info("reload applied", "source", snap.Source, "source_hash", snap.Graph.SourceHash,
		"previous_source_hash", old.Graph.SourceHash, "policy_changed", changed,
		"digest", snap.Graph.Digest, "previous_digest", old.Graph.Digest, "signed_by", s.bundleStatus(snap.Graph).SignedBy)
	return changed, nil
}

// Status describes the active snapshot and the last reload.
func (s *Server) Status() admin.Status {
	snap := s.snap.Load()
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	st := admin.Status{
		SourceHash:      snap.Graph.SourceHash,
		Source:          snap.Source,
		LoadedAt:        snap.LoadedAt,
		LastReloadError: s.lastReloadErr,
		LastFlush:       s.budgets.LastFlush(),
		Bundle:          s.bundleStatus(snap.Graph),
		Circuits:        s.circuits.Status(time.Now()),
		SuspendedRules:  s.rules.Status(snap.Graph),
		Pools:           s.pools.Status(time.Now()),
	}
	if h := s.opts.LedgerHealth; h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ls := h.Status(ctx)
		st.Ledger = &ls
	}
	return st
}

// Catalog reports every routable channel of the serving snapshot with the
// provenance and age of its capability claim.
func (s *Server) Catalog(now time.Time) admin.CatalogReport {
	g := s.snap.Load().Graph
	rows := catalog.Rows(g, now)
	if rows == nil {
		rows = []catalog.Row{}
	}
	return admin.CatalogReport{SourceHash: g.SourceHash, AsOf: now.UTC(), Channels: rows}
}

// Budgets reports every open budget bucket's exact figures.
func (s *Server) Budgets() ([]budget.BucketReport, error) {
	return s.budgets.Report(s.snap.Load().Graph)
}

// Usage reports the usage ledger's rows of the UTC day starting at day.
func (s *Server) Usage(day time.Time) ([]budget.UsageDelta, error) {
	return s.budgets.Usage(day.Unix())
}
