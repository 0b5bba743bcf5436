// Command pistrad is the pistra gateway daemon. It serves the decision graph
// compiled into it (gen/) or, with --bundle, a bundle.json built by the same
// pistrac, on a public listener (OpenAI and Anthropic dialects) and an admin
// listener authenticated with $PISTRA_ADMIN_TOKEN. Every graph's content is
// checked against its digest; with -bundle-public-key only graphs signed by
// that key serve. -tls-cert/-tls-key serve the listeners over TLS and HTTP/2.
//
// Signals: SIGHUP reloads the policy (a bad one is refused and the running
// one keeps serving) and re-reads the TLS certificates (likewise); SIGINT
// and SIGTERM stop accepting connections, let in-flight requests finish
// within --shutdown-grace, and exit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pistra/pistra/gen"
	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/certs"
	"github.com/pistra/pistra/runtime/ledger"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
	"github.com/pistra/pistra/runtime/pool/extproc"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pistrad:", err)
		os.Exit(1)
	}
}

type config struct {
	opts       server.Options
	ledger     ledgerFlags
	bundle     string
	bundleKey  string
	tls        tlsFlags
	grace      time.Duration
	drain      time.Duration
	logLevel   slog.Level
	logFlushes time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("pistrad", flag.ContinueOnError)
	fs.StringVar(&c.bundle, "bundle", "", "serve this bundle.json instead of the compiled-in policy")
	fs.StringVar(&c.bundleKey, "bundle-public-key", "",
		"serve only bundles signed by this ed25519 public key (PEM `FILE`, PKIX): an unsigned or otherwise signed one is refused")
	fs.StringVar(&c.opts.PublicAddr, "listen", "127.0.0.1:8080", "public listener address")
	fs.StringVar(&c.opts.AdminAddr, "admin-listen", "127.0.0.1:8081", "admin listener address")
	fs.Int64Var(&c.opts.MaxBodyBytes, "max-body-bytes", 32<<20, "largest request body accepted")
	fs.DurationVar(&c.opts.BodyReadTimeout, "body-read-timeout", time.Minute, "how long a request body may take to arrive")
	fs.DurationVar(&c.opts.ClientWriteTimeout, "client-write-timeout", time.Minute,
		"how long one write of a streamed response may block on a client that does not read before it is cut")
	fs.DurationVar(&c.grace, "shutdown-grace", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	fs.DurationVar(&c.drain, "drain-delay", 0,
		"after SIGTERM, how long /readyz reports not ready while pistrad still serves, before it stops accepting (e.g. 5s behind a load balancer)")
	fs.IntVar(&c.opts.MaxAnswerBytes, "max-answer-bytes", proxy.DefaultMaxAnswerBytes,
		"largest non-stream answer read whole (checked and metered) before it is relayed; a larger one is relayed unchecked")
	fs.DurationVar(&c.opts.MaxRetryWait, "max-retry-wait", 10*time.Second, "cap on a retry's backoff or retry-after")
	fs.DurationVar(&c.opts.SessionIdle, "session-idle", 5*time.Minute, "end a WebSocket session (Realtime, Live) in which no message passed for this long")
	c.opts.Transport = proxy.DefaultTransportOptions
	fs.IntVar(&c.opts.Transport.MaxIdleConnsPerHost, "max-idle-conns-per-host", c.opts.Transport.MaxIdleConnsPerHost,
		"idle upstream connections kept per host; size it to the expected concurrency")
	fs.BoolVar(&c.opts.StdlibServer, "stdlib-server", false,
		"serve a cleartext public listener with net/http's server alone instead of the lean HTTP/1.1 server in front of it")
	fs.BoolVar(&c.opts.Transport.StdlibOnly, "stdlib-upstream-client", false,
		"send cleartext (http://) upstreams through net/http's Transport instead of the lean HTTP/1.1 client")
	fs.StringVar(&c.opts.PoolOptions.Resolver, "pool-dns-server", "",
		"DNS server (`host:port`) pool member sets are resolved with, e.g. a cluster DNS; empty: the system's, from /etc/resolv.conf")
	fs.DurationVar(&c.opts.PoolOptions.MinTTL, "pool-min-ttl", pool.DefaultMinTTL,
		"soonest a pool's member set is resolved again, whatever its records' TTL (also the first retry after a failed resolution)")
	fs.DurationVar(&c.opts.PoolOptions.MaxTTL, "pool-max-ttl", pool.DefaultMaxTTL,
		"latest a pool's member set is resolved again, whatever its records' TTL (also the longest retry backoff)")
	c.ledger.register(fs)
	c.tls.register(fs)
	fs.Float64Var(&c.opts.DegradedShare, "budget-degraded-share", budget.DefaultDegradedShare,
		"fraction of each budget limit this node may spend on its own while its ledger has no quorum, before refusing budget_error")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "debug, info, warn or error")
	fs.DurationVar(&c.logFlushes, "log-flush-interval", 200*time.Millisecond,
		"how often buffered log lines are written to stderr (0: every line at once)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.opts.PoolOptions.Picker = extproc.DialPool
	if p := c.opts.PoolOptions; p.MinTTL <= 0 || p.MaxTTL < p.MinTTL {
		return c, fmt.Errorf("-pool-min-ttl %s and -pool-max-ttl %s: want 0 < min <= max", p.MinTTL, p.MaxTTL)
	}
	return c, nil
}

func run(args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	var logOut io.Writer = os.Stderr
	if c.logFlushes > 0 {
		sink := newLogSink(os.Stderr, c.logFlushes)
		defer sink.Close()
		logOut = sink
	}
	log := slog.New(record.NewJSONHandler(logOut, c.logLevel))
	c.opts.Logger = log
	c.opts.AdminToken = os.Getenv("PISTRA_ADMIN_TOKEN")
	c.opts.Load = loader(c.bundle, gen.Graph)
	if c.bundleKey != "" {
		if c.opts.BundleKey, err = readBundleKey(c.bundleKey); err != nil {
			return err
		}
		log.Info("bundle signatures required", "key_id", c.opts.BundleKey.KeyID())
	}
	warnUnsigned(log, c.bundle, c.bundleKey)
	pairs, err := c.tls.load(&c.opts)
	if err != nil {
		return err
	}
	for _, f := range pairs {
		log.Info("tls certificate loaded", f.Describe()...)
	}
	node, err := c.ledger.open(log)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if node != nil {
		// Stopped after the server, whose last budget flush goes to it.
		defer node.Shutdown()
		awaitLedger(node, log, 10*time.Second)
		c.opts.Ledger, c.opts.Suspensions, c.opts.LedgerHealth = node, node, node
		if c.ledger.listen != "" {
			c.opts.Members = node
		}
	} else {
		log.Warn("-ledger-in-memory: budget spend is kept in this process only, forgotten on restart, and not shared with other replicas")
	}
	stopTracing, err := setupTracing(&c.opts, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	srv, err := server.New(c.opts)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	return serveUntilSignal(srv, pairs, log, c.drain, c.grace)
}

// awaitLedger waits, up to limit, for the ledger to have replayed its
// directory and to know a leader, so the first requests are not served
// degraded while a lone node elects itself; past limit it serves anyway,
// degraded, and says so.
func awaitLedger(node *ledger.Node, log *slog.Logger, limit time.Duration) {
	deadline := time.Now().Add(limit)
	select {
	case <-node.Ready():
	case <-time.After(limit):
	}
	for !node.Writable() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !node.Writable() {
		log.Warn("the ledger has no leader yet: serving degraded until it elects one")
	}
}

// loader reads the bundle file on every call, so a reload picks up a
// rewritten file; without --bundle it serves compiled, the graph built in.
func loader(path string, compiled *plan.Graph) server.Loader {
	if path == "" {
		// Checked like a bundle file, so a hand edit of gen/ is caught too;
		// the source says what a reload can change: nothing, here.
		return func() (*plan.Graph, string, error) {
			return compiled, "compiled-in (a reload serves the same graph; serve -bundle to reload policy edits)", bundle.CheckDigest(compiled)
		}
	}
	return func() (*plan.Graph, string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, path, err
		}
		g, err := bundle.Load(b)
		if err != nil {
			return nil, path, fmt.Errorf("%s: %w", path, err)
		}
		return g, path, nil
	}
}

// warnUnsigned warns when a bundle file is served without a key to check
// its signature: a digest catches an accidental or naive edit, but whoever
// can write the file can recompute it, so the file then decides what is
// served.
func warnUnsigned(log *slog.Logger, bundlePath, keyPath string) {
	if bundlePath != "" && keyPath == "" {
		log.Warn("serving a bundle file without -bundle-public-key: anyone who can write it can change the policy served "+
			"(its digest catches accidental edits only); sign bundles with pistrac build -signing-key and pass -bundle-public-key",
			"bundle", bundlePath)
	}
}

func readBundleKey(path string) (*bundle.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-bundle-public-key: %w", err)
	}
	v, err := bundle.NewVerifier(b)
	if err != nil {
		return nil, fmt.Errorf("-bundle-public-key %s: %w", path, err)
	}
	return v, nil
}

// serveUntilSignal serves until SIGINT or SIGTERM, reloading the policy
// and re-reading the TLS certificates on SIGHUP. On the way out it first
// reports not ready for drain, still serving, then stops accepting and
// gives in-flight requests up to grace to finish.
func serveUntilSignal(srv *server.Server, pairs []*certs.File, log *slog.Logger, drain, grace time.Duration) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for {
		select {
		case err := <-srv.Errors():
			return err
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				_, _ = srv.Reload() // logged by the server; the old policy keeps serving
				reloadCerts(pairs, log)
				continue
			}
			log.Info("shutting down", "signal", sig.String(), "drain_delay", drain.String(), "grace", grace.String())
			srv.Drain()
			select {
			case <-time.After(drain):
			case <-sigs: // a second signal skips the wait
			}
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("in-flight requests outlived --shutdown-grace %s and were cut", grace)
				}
				return err
			}
			log.Info("stopped")
			return nil
		}
	}
}
