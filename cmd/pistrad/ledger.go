package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/pistra/pistra/runtime/ledger"
	"github.com/pistra/pistra/runtime/ledger/cluster"
	"github.com/pistra/pistra/runtime/server"
)

// The raft ledger is what the server asks of a durable ledger (budget
// spend and suspensions are held to it in its own package): this is the
// one place it is wired in.
var (
	_ server.LedgerHealth = (*ledger.Node)(nil)
	_ server.Members      = (*ledger.Node)(nil)
)

// clusterSecretEnv names the variable holding the secret nodes present to
// each other's internal endpoint: never the admin token.
const clusterSecretEnv = "PISTRA_CLUSTER_SECRET"

// ledgerFlags say where budget spend and suspensions are kept: a
// directory for a single node, and for a cluster how this node is named,
// reached and secured, and whom it bootstraps or joins with.
type ledgerFlags struct {
	dir, id, listen, advertise, peers, join string
	ca, cert, key                           string
	insecure, inMemory                      bool
}

func (l *ledgerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.dir, "ledger-dir", "", "directory of the durable ledger (budget spend, metered usage, suspensions); a lone node bootstraps itself in it on first start")
	fs.StringVar(&l.id, "node-id", "", "this node's name in the cluster (keep it across restarts); with -raft-listen")
	fs.StringVar(&l.listen, "raft-listen", "", "host:port of this node's cluster port (raft and the internal flush endpoint)")
	fs.StringVar(&l.advertise, "raft-advertise", "", "host:port the other nodes reach this one by, and its certificate's name (default -raft-listen)")
	fs.StringVar(&l.peers, "peers", "", "id=host:port,... the voters a new cluster bootstraps with, this node among them")
	fs.StringVar(&l.join, "join", "", "host:port,... members a new node asks to add it (to replace a removed one)")
	fs.StringVar(&l.ca, "cluster-ca", "", "PEM file of the cluster CA every node's certificate is signed by")
	fs.StringVar(&l.cert, "cluster-cert", "", "PEM file of this node's certificate")
	fs.StringVar(&l.key, "cluster-key", "", "PEM file of this node's private key")
	fs.BoolVar(&l.insecure, "cluster-insecure", false, "plaintext cluster traffic, on loopback only: for tests on one host")
	fs.BoolVar(&l.inMemory, "ledger-in-memory", false,
		"keep budget spend and usage in this process's memory instead of a ledger: forgotten on restart, not shared, no suspensions; for tests and benchmarks")
}

// open starts the ledger the flags describe, or returns nil for
// -ledger-in-memory.
func (l *ledgerFlags) open(log *slog.Logger) (*ledger.Node, error) {
	switch {
	case l.dir == "" && l.inMemory:
		if l.listen != "" || l.peers != "" || l.join != "" {
			return nil, errors.New("-raft-listen, -peers and -join need -ledger-dir")
		}
		return nil, nil
	case l.dir == "":
		return nil, errors.New("name the ledger's directory with -ledger-dir (or, for tests, -ledger-in-memory)")
	case l.inMemory:
		return nil, errors.New("-ledger-dir and -ledger-in-memory exclude each other")
	}
	cfg := ledger.Config{Dir: l.dir, ID: l.id, Logger: log}
	if l.listen == "" {
		return ledger.Open(cfg)
	}
	if l.id == "" {
		return nil, errors.New("-raft-listen needs -node-id")
	}
	cfg.Secret = os.Getenv(clusterSecretEnv)
	if cfg.Secret == "" {
		return nil, fmt.Errorf("a cluster needs its shared secret in $%s", clusterSecretEnv)
	}
	var err error
	if l.peers != "" {
		if cfg.Peers, err = ledger.ParsePeers(l.peers); err != nil {
			return nil, fmt.Errorf("-peers: %w", err)
		}
	}
	if l.join != "" {
		cfg.Join = strings.Split(l.join, ",")
	}
	opts := cluster.Options{Advertise: l.advertise, Insecure: l.insecure, Logger: log}
	if opts.Advertise == "" {
		opts.Advertise = l.listen
	}
	if !l.insecure {
		if opts.Credentials, err = cluster.LoadCredentials(l.ca, l.cert, l.key); err != nil {
			return nil, err
		}
	}
	if cfg.Cluster, err = cluster.Listen(l.listen, opts); err != nil {
		return nil, err
	}
	return ledger.Open(cfg)
}
