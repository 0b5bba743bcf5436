package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/pistra/pistra/runtime/ledger/cluster"
)

// Config says where a node keeps its state and how it finds its cluster.
type Config struct {
	// Dir holds raft's log and stable store (raft.db) and its snapshots.
	Dir string
	// ID names this node in raft's configuration; a restart with the same
	// Dir must keep it. Default "local" for a single node.
	ID string
	// Cluster is this node's cluster port (raft and the internal
	// endpoint); Open owns it from the call on, closing it if it fails,
	// and Shutdown closes it. Nil runs a single node with no
	// network, bootstrapped on its first start.
	Cluster *cluster.Listener
	// Peers are the voters, this node among them, that a node whose Dir
	// has no state yet bootstraps with. A Dir with state ignores them: the
	// node rejoins as raft's stored configuration says. Empty, a cluster
	// node with no Join bootstraps alone and others join it.
	Peers []Peer
	// Join lists cluster ports of members that a node whose Dir has no
	// state asks to add it, instead of bootstrapping: how a replacement
	// comes in.
	Join []string
	// Secret authenticates requests to the internal endpoint, between
	// nodes that mutual TLS has already admitted; required with Cluster.
	Secret string
	// ApplyTimeout bounds one write (a flush, a suspension, a membership
	// change) from its start to its commit. Default 2s.
	ApplyTimeout time.Duration
	Logger       *slog.Logger

	// tune adjusts raft's configuration; tests shorten its timeouts.
	tune func(*raft.Config)
}

// Peer is one voter of a static bootstrap.
type Peer struct{ ID, Addr string }

// ParsePeers reads "id1=host:port,id2=host:port".
func ParsePeers(s string) ([]Peer, error) {
	var out []Peer
	for p := range strings.SplitSeq(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("peer %q: want id=host:port", p)
		}
		out = append(out, Peer{ID: id, Addr: addr})
	}
	return out, nil
}

// Node is one member of the ledger: it owns raft, its stores and the
// replica of the state, and is the budget.Ledger pistrad flushes to.
type Node struct {
	cfg   Config
	log   *slog.Logger
	fsm   *FSM
	raft  *raft.Raft
	store *raftboltdb.BoltStore
	http  *http.Server
	ready chan struct{}

	flush flusher

	ctx      context.Context // cancelled by Shutdown
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	shutdown sync.Once
}

// retainSnapshots is how many snapshots the directory keeps: one to
// restore from, one in case the newest is damaged.
const retainSnapshots = 2

// Open starts the node in cfg.Dir: a new directory bootstraps (alone,
// with Peers) or asks to join; one with state recovers it and rejoins.
func Open(cfg Config) (*Node, error) {
	n, err := open(cfg)
	if err != nil && cfg.Cluster != nil {
		cfg.Cluster.Close()
	}
	return n, err
}

func open(cfg Config) (*Node, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	// A second process on the same directory fails at once instead of
	// waiting forever on bolt's file lock.
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db"), BoltOptions: &bbolt.Options{Timeout: time.Second}})
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", cfg.Dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{cfg: cfg, log: cfg.Logger, fsm: newFSM(), store: store, ready: make(chan struct{}), ctx: ctx, cancel: cancel}
	n.flush.session = newSession(cfg.ID)
	if err := n.start(); err != nil {
		cancel()
		store.Close()
		return nil, err
	}
	return n, nil
}

func (c *Config) check() error {
	if c.Dir == "" {
		return errors.New("ledger: no data directory")
	}
	if c.ID == "" && c.Cluster == nil {
		c.ID = "local"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ApplyTimeout <= 0 {
		c.ApplyTimeout = 2 * time.Second
	}
	switch {
	case c.ID == "":
		return errors.New("ledger: a cluster node needs an ID")
	case c.Cluster == nil && (len(c.Peers) > 0 || len(c.Join) > 0):
		return errors.New("ledger: peers and join need a cluster port")
	case c.Cluster != nil && c.Secret == "":
		return errors.New("ledger: a cluster node needs the cluster secret")
	case len(c.Peers) > 0 && len(c.Join) > 0:
		return errors.New("ledger: bootstrap peers and join are exclusive")
	}
	self := false
	for _, p := range c.Peers {
		if p.ID != c.ID {
			continue
		}
		if self = true; p.Addr != c.Cluster.Advertise() {
			return fmt.Errorf("ledger: peers name this node %s at %s, but it advertises %s", p.ID, p.Addr, c.Cluster.Advertise())
		}
	}
	if len(c.Peers) > 0 && !self {
		return fmt.Errorf("ledger: peers do not include this node (%s)", c.ID)
	}
	return nil
}

func (n *Node) start() error {
	hl := raftLogger(n.log)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.Dir, retainSnapshots, hl)
	if err != nil {
		return fmt.Errorf("ledger: snapshots: %w", err)
	}
	existing, err := raft.HasExistingState(n.store, n.store, snaps)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	target, err := n.recoveredIndex()
	if err != nil {
		return err
	}
	logs, err := raft.NewLogCache(512, n.store)
	if err != nil {
		return err
	}
	trans := n.transport(hl)
	if n.raft, err = raft.NewRaft(n.raftConfig(hl), n.fsm, logs, n.store, snaps, trans); err != nil {
		trans.(raft.WithClose).Close()
		return fmt.Errorf("ledger: raft: %w", err)
	}
	if !existing && len(n.cfg.Join) == 0 {
		// ErrCantBootstrap: a peer of the same static bootstrap reached
		// this node between NewRaft and here and its entries already gave
		// this node the configuration; that is the cluster it meant to join.
		err := n.raft.BootstrapCluster(n.bootstrapConfig(trans.LocalAddr())).Error()
		if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			n.raft.Shutdown().Error()
			return fmt.Errorf("ledger: bootstrap: %w", err)
		}
	}
	n.goRun(func() { n.watchReady(target) })
	n.goRun(n.compactLoop)
	if n.cfg.Cluster != nil {
		n.serveInternal()
		if !existing && len(n.cfg.Join) > 0 {
			n.goRun(n.joinLoop)
		}
	}
	return nil
}

func (n *Node) goRun(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// raftConfig is raft's defaults but for compaction. The state is small
// (a number per bucket and window) and entries arrive a few a second per
// node, so a snapshot is cheap: take one every few thousand entries so a
// restart replays little, and keep a couple of thousand entries behind
// it so a follower away for minutes catches up from the log rather than
// by a whole snapshot.
func (n *Node) raftConfig(hl hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.ID)
	rc.Logger = hl
	rc.SnapshotThreshold = 4096
	rc.TrailingLogs = 2048
	if n.cfg.tune != nil {
		n.cfg.tune(rc)
	}
	return rc
}

// singleAddr is a lone node's transport address: fixed, because raft's
// stored configuration names it across restarts.
const singleAddr = "local"

func (n *Node) transport(hl hclog.Logger) raft.Transport {
	if n.cfg.Cluster == nil {
		_, t := raft.NewInmemTransport(singleAddr)
		return t
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: n.cfg.Cluster.Raft(), MaxPool: 3, Timeout: 10 * time.Second, Logger: hl,
	})
}

func (n *Node) bootstrapConfig(self raft.ServerAddress) raft.Configuration {
	if len(n.cfg.Peers) == 0 {
		return raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(n.cfg.ID), Address: self}}}
	}
	var c raft.Configuration
	for _, p := range n.cfg.Peers {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	return c
}

// recoveredIndex is the last command the directory's log holds: until
// it is applied, the replica is behind what this node itself knew
// before it stopped. Commands are nearly every entry, so the walk back
// past the others is short; a log with none leaves only the snapshot,
// which raft restores before NewRaft returns.
func (n *Node) recoveredIndex() (uint64, error) {
	first, err := n.store.FirstIndex()
	if err != nil {
		return 0, fmt.Errorf("ledger: %w", err)
	}
	last, err := n.store.LastIndex()
	if err != nil {
		return 0, fmt.Errorf("ledger: %w", err)
	}
	for i := last; i >= first && i > 0; i-- {
		var l raft.Log
		if err := n.store.GetLog(i, &l); err != nil {
			return 0, fmt.Errorf("ledger: log entry %d: %w", i, err)
		}
		if l.Type == raft.LogCommand {
			return i, nil
		}
	}
	return 0, nil
}

// watchReady closes Ready once the replica has applied the command at
// target.
func (n *Node) watchReady(target uint64) {
	if n.fsm.waitApplied(n.ctx, target) == nil {
		close(n.ready)
	}
}

// Ready is closed once the replica holds at least what this node's
// directory held at Open: before that, Read may answer from an older
// state. A node that cannot reach its cluster's leader stays unready.
func (n *Node) Ready() <-chan struct{} { return n.ready }

func (n *Node) serveInternal() {
	n.http = &http.Server{
		Handler:           n.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}
	n.goRun(func() { n.http.Serve(n.cfg.Cluster.HTTP()) })
}

// Shutdown stops the node: the internal endpoint, raft and its transport,
// the stores, and the cluster port.
func (n *Node) Shutdown() error {
	var err error
	n.shutdown.Do(func() {
		n.cancel()
		if n.http != nil {
			n.http.Close()
		}
		err = n.raft.Shutdown().Error()
		if n.cfg.Cluster != nil {
			err = errors.Join(err, n.cfg.Cluster.Close())
		}
		n.wg.Wait()
		err = errors.Join(err, n.store.Close())
	})
	return err
}
