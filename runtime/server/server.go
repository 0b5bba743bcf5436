// Package server is pistrad's HTTP front: the public listener (inference
// routes, preflight, models, health, metrics) and the admin listener, the
// active policy snapshot and its reloads, client authentication, the
// bounded body read, asking the routing decision (package route) and
// every error answer before the attempt loop takes over.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pistra/pistra/runtime/a2a"
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/agentcall"
	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/circuit"
	"github.com/pistra/pistra/runtime/h1"
	"github.com/pistra/pistra/runtime/mcp"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/realtime"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/snapshot"
	"github.com/pistra/pistra/runtime/suspend"
	"github.com/pistra/pistra/runtime/tracing"
)

// Loader produces the decision graph to serve and says where it came from.
// pistrad's loader reads the compiled-in graph or a bundle file; it is
// called at start-up and on every reload.
type Loader func() (g *plan.Graph, source string, err error)

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	PublicAddr string // default 127.0.0.1:8080
	AdminAddr  string // default 127.0.0.1:8081
	// AdminToken authenticates the admin API; the server refuses to start
	// without one.
	AdminToken string
	// MaxBodyBytes bounds a request body (default 32 MiB).
	MaxBodyBytes int64
	// BodyReadTimeout bounds reading a request body (default 60 s), so a
	// client that declares a body and stalls cannot hold a handler.
	BodyReadTimeout time.Duration
	// ClientWriteTimeout bounds one blocked write or flush of a streamed
	// response (default 60 s): a client that stops reading is cut.
	ClientWriteTimeout time.Duration
	// StdlibServer serves a cleartext public listener with net/http's
	// server alone instead of runtime/h1's in front of it.
	StdlibServer bool
	Load         Loader
	// BundleKey, when set, is the only key whose signed graphs are served:
	// a graph it did not sign is refused at start and at reload.
	BundleKey *bundle.Verifier
	// LookupEnv reads provider credentials (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	Logger    *slog.Logger // default: JSON to stderr
	Transport proxy.TransportOptions
	// Upstream replaces the tuned transport built from Transport (tests,
	// benchmarks); nil in production.
	Upstream http.RoundTripper
	// MaxRetryWait caps a retry's backoff or retry-after (default 10s).
	MaxRetryWait time.Duration
	// Ledger keeps budget spend (default: in this process's memory, so
	// budgets are per process).
	Ledger budget.Ledger
	// Suspensions keeps operators' suspensions; nil when there is no
	// durable ledger, and then nothing can be suspended.
	Suspensions suspend.Store
	// LedgerHealth reports the durable ledger's state for readiness and
	// the admin status; nil without one.
	LedgerHealth LedgerHealth
	// Members changes the ledger cluster's membership (nil without a
	// cluster ledger): how an operator replaces a node.
	Members Members
	// DegradedShare is the fraction of each budget limit a node may spend
	// on its own while its ledger cannot take its flushes (default
	// budget.DefaultDegradedShare).
	DegradedShare float64
	// MaxAnswerBytes bounds a non-stream answer read whole before it is
	// relayed (default proxy.DefaultMaxAnswerBytes).
	MaxAnswerBytes int
	// Pools picks the member each attempt on a pooled provider dials; nil
	// picks from the server's own pool set (PoolOptions). Tests set it.
	Pools Pools
	// PoolOptions say how pools' member sets are resolved and their
	// pickers dialled; the server adds its logger and metrics.
	PoolOptions pool.Options
	// Tracer traces every inference request (a SERVER span, a CLIENT span
	// per attempt); nil traces nothing, at no cost per request.
	Tracer *tracing.Tracer
	// SessionIdle ends a WebSocket session in which no message passed for
	// this long (default 5 min).
	SessionIdle time.Duration
	// PublicTLS and AdminTLS, when set, serve that listener over TLS, with
	// HTTP/2 offered to clients that support it; nil serves cleartext
	// HTTP/1.1.
	PublicTLS, AdminTLS *tls.Config
}

// Server serves one policy snapshot at a time on two listeners.
type Server struct {
	opts Options
	log  *slog.Logger
	// requests writes the request lines when the logger's handler can
	// write them itself (record.JSONHandler); nil: through log.
	requests requestLogger
	metrics  *metrics.Metrics
	tracer   *tracing.Tracer
	scrape   http.Handler
	proxy    *proxy.Proxy
	sessions *realtime.Opener
	budgets  *budget.Gate
	// calls is the gate of MCP and A2A traffic, protocols its protocols
	// by kind.
	calls     *agentcall.Gate
	protocols map[plan.ServiceKind]agentcall.Protocol
	// circuits keeps the providers' breakers across reloads and is their
	// gate; suspensions is the gate of Options.Suspensions.
	circuits    *circuit.Set
	suspensions suspend.Gate
	// rules are the access rules suspended now, per profile, for routing.
	rules *suspend.Rules
	// pools keeps the pools' member sets and pickers across reloads.
	pools *pool.Set
	// picks are Options.Pools, else the pool set's: the attempt loop's and
	// preflight's.
	picks Pools
	// stopFlush ends the budget flush loop; flushed is closed once it has
	// made its last flush.
	stopFlush context.CancelFunc
	flushed   chan struct{}
	public    *http.Server
	admin     *http.Server
	// lean serves the public listener in front of public when it is
	// cleartext; nil over TLS or with StdlibServer.
	lean    *h1.Server
	pubLn   net.Listener
	adminLn net.Listener
	errs    chan error

	snap     atomic.Pointer[snapshot.Snapshot]
	ready    atomic.Bool
	reloadMu sync.Mutex
	// lastReloadErr is guarded by reloadMu.
	lastReloadErr string
	exchanges     sync.Pool
}

// New loads and validates the first snapshot; a policy that cannot be
// served (a missing credential, a bad bundle) is a start-up error.
func New(o Options) (*Server, error) {
	o = withDefaults(o)
	s := &Server{opts: o, log: o.Logger, metrics: metrics.New(), tracer: o.Tracer, errs: make(chan error, 2)}
	s.requests, _ = o.Logger.Handler().(requestLogger)
	s.scrape = s.metrics.Handler()
	s.budgets = budget.New(o.Ledger, s.metrics, time.Now)
	if o.DegradedShare > 0 {
		s.budgets.SetDegradedShare(o.DegradedShare)
	}
	s.circuits = circuit.NewSet(s.logCircuit)
	po := o.PoolOptions
	po.Logger, po.Metrics = s.log, s.metrics
	s.pools = pool.New(po)
	s.suspensions = suspend.Gate{Store: o.Suspensions}
	s.rules = suspend.NewRules(o.Suspensions)
	// An open circuit is checked before a budget is held for the candidate; a
	// half-open probe taken for a candidate the budget then refuses is given
	// back (the circuit's probe ticket).
	gate := admission.Gates{s.circuits, s.budgets}
	if o.Suspensions != nil {
		gate = admission.Gates{s.suspensions, s.circuits, s.budgets}
	}
	s.proxy = &proxy.Proxy{Transport: o.Upstream, Metrics: s.metrics, MaxRetryWait: o.MaxRetryWait, Gate: gate,
		Circuits: s.circuits, MaxAnswerBytes: o.MaxAnswerBytes}
	s.sessions = &realtime.Opener{Gate: gate, Metrics: s.metrics}
	s.picks = o.Pools
	if s.picks == nil {
		s.picks = poolPicks{s.pools}
	}
	s.proxy.Pools = s.picks
	s.calls = &agentcall.Gate{Budgets: s.budgets, Suspensions: o.Suspensions, Metrics: s.metrics, Transport: o.Upstream}
	s.protocols = map[plan.ServiceKind]agentcall.Protocol{plan.KindMCPServer: mcp.Protocol{}, plan.KindAgent: a2a.Protocol{}}
	s.exchanges.New = func() any { return new(exchange) }
	snap, err := s.loadSnapshot()
	if err != nil {
		return nil, err
	}
	s.snap.Store(snap)
	s.metrics.ReadHealth(health{s})
	adminHandler, err := admin.Handler(o.AdminToken, s)
	if err != nil {
		s.pools.Close()
		return nil, err
	}
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	s.public = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: errLog,
		TLSConfig: o.PublicTLS}
	if o.PublicTLS == nil && !o.StdlibServer {
		s.lean = &h1.Server{Handler: s, Fallback: s.public,
			ReadHeaderTimeout: s.public.ReadHeaderTimeout, IdleTimeout: s.public.IdleTimeout}
	}
	s.admin = &http.Server{Handler: adminHandler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog, TLSConfig: o.AdminTLS}
	s.log.Info("snapshot active", "source", snap.Source, "source_hash", snap.Graph.SourceHash,
		"digest", snap.Graph.Digest, "signed_by", s.bundleStatus(snap.Graph).SignedBy)
	return s, nil
}

// logCircuit logs each breaker transition: opening is a warning, since a
// provider is then out of rotation.
func (s *Server) logCircuit(provider string, from, to circuit.State, failures int64) {
	level := slog.LevelInfo
	if to == circuit.Open {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "circuit "+to.String(), "provider", provider, "from", from.String(), "consecutive_failures", failures)
}

func withDefaults(o Options) Options {
	if o.PublicAddr == "" {
		o.PublicAddr = "127.0.0.1:8080"
	}
	if o.AdminAddr == "" {
		o.AdminAddr = "127.0.0.1:8081"
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 32 << 20
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = time.Minute
	}
	if o.ClientWriteTimeout <= 0 {
		o.ClientWriteTimeout = time.Minute
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Logger == nil {
		o.Logger = slog.New(record.NewJSONHandler(os.Stderr, nil))
	}
	if o.Transport == (proxy.TransportOptions{}) {
		o.Transport = proxy.DefaultTransportOptions
	}
	if o.Upstream == nil {
		o.Upstream = proxy.NewTransport(o.Transport)
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = 10 * time.Second
	}
	if o.Ledger == nil {
		o.Ledger = budget.NewMemory()
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = 5 * time.Minute
	}
	return o
}

// Start binds both listeners and serves in the background. Errors from
// serving later arrive on Errors.
func (s *Server) Start() error {
	var err error
	if s.pubLn, err = net.Listen("tcp", s.opts.PublicAddr); err != nil {
		return fmt.Errorf("public listener: %w", err)
	}
	if s.adminLn, err = net.Listen("tcp", s.opts.AdminAddr); err != nil {
		s.pubLn.Close()
		return fmt.Errorf("admin listener: %w", err)
	}
	if s.lean != nil {
		go s.serveLean()
	} else {
		go s.serve(s.public, s.pubLn)
	}
	go s.serve(s.admin, s.adminLn)
	ctx, stop := context.WithCancel(context.Background())
	s.stopFlush, s.flushed = stop, make(chan struct{})
	go func() { s.budgets.Run(ctx); close(s.flushed) }()
	s.ready.Store(true)
	s.log.Info("listening", "public", s.pubLn.Addr().String(), "admin", s.adminLn.Addr().String(),
		"public_tls", s.opts.PublicTLS != nil, "admin_tls", s.opts.AdminTLS != nil)
	return nil
}

// serve serves ln, over TLS when srv has a TLS configuration: ServeTLS is
// what sets HTTP/2 up (h2 in ALPN); the certificate comes from the
// configuration's GetCertificate, so no file names are passed.
func (s *Server) serve(srv *http.Server, ln net.Listener) {
	var err error
	if srv.TLSConfig != nil {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if !errors.Is(err, http.ErrServerClosed) {
		s.errs <- err
	}
}

// serveLean serves the public listener with runtime/h1's server, which
// hands what it does not serve to net/http's.
func (s *Server) serveLean() {
	if err := s.lean.Serve(s.pubLn); !errors.Is(err, http.ErrServerClosed) {
		s.errs <- err
	}
}

// shutdowner is a server that can stop gracefully or at once.
type shutdowner interface {
	Shutdown(context.Context) error
	Close() error
}

// servers are what Shutdown stops: the public listener's and the admin's.
func (s *Server) servers() []shutdowner {
	if s.lean != nil {
		return []shutdowner{s.lean, s.admin}
	}
	return []shutdowner{s.public, s.admin}
}

// Errors reports a listener that stopped serving on its own.
func (s *Server) Errors() <-chan error { return s.errs }

// PublicAddr is the bound public address (useful with port 0).
func (s *Server) PublicAddr() string { return s.pubLn.Addr().String() }

// AdminAddr is the bound admin address.
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// Drain reports not ready on /readyz while everything keeps serving, so a
// load balancer stops sending new work before Shutdown closes the
// listeners.
func (s *Server) Drain() { s.ready.Store(false) }

// Shutdown stops accepting connections, reports not ready, and waits for
// in-flight requests (streams included) until ctx ends; then it closes
// whatever is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.ready.Store(false)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	servers := s.servers()
	for i, srv := range servers {
		wg.Go(func() { errs[i] = srv.Shutdown(ctx) })
	}
	wg.Wait()
	s.pools.Close()
	if s.stopFlush != nil {
		s.stopFlush() // in-flight requests are settled: flush what they spent
		<-s.flushed
	}
	if err := errors.Join(errs...); err != nil {
		for _, srv := range servers {
			srv.Close()
		}
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// Metrics exposes the server's series (tests read them back).
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// ServeHTTP routes the public listener.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := r.URL.Path; path {
	case "/v1/chat/completions":
		s.inference(w, r, plan.RouteChatCompletions)
	case "/v1/completions":
		s.inference(w, r, plan.RouteCompletions)
	case "/v1/embeddings":
		s.inference(w, r, plan.RouteEmbeddings)
	case "/v1/responses":
		s.inference(w, r, plan.RouteResponses)
	case "/v1/messages":
		s.inference(w, r, plan.RouteMessages)
	case "/v1/realtime":
		s.session(w, r, plan.RouteRealtime, "")
	case "/v1/preflight":
		s.preflight(w, r)
	case "/v1/models":
		s.models(w, r, "")
	case "/healthz":
		writePlain(w, http.StatusOK, "ok\n")
	case "/readyz":
		s.readyz(w)
	case "/metrics":
		s.scrape.ServeHTTP(w, r)
	default:
		if v, ok := liveVersion(path); ok {
			s.session(w, r, plan.RouteLive, v)
			return
		}
		if id, ok := cutModelID(path); ok {
			s.models(w, r, id)
			return
		}
		if k, name, rest, ok := cutService(path); ok {
			s.serveCall(w, r, k, name, rest)
			return
		}
		s.notFound(w, r)
	}
}
