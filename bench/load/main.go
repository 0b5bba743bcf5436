// Command load measures what pistrad costs in front of an upstream, against
// the same fake upstream reached directly, through a pooled lean Go relay
// (the floor), a bare httputil.ReverseProxy and nginx, in one run: added
// latency (p50, p99), time to first byte for streams, requests per second,
// the gateway's CPU time per request (utime+stime from /proc, over all its
// processes, over the window / requests) and, for the Go gateways, heap
// allocations per request. The headline pistrad has everything on: a budget
// held and settled on every request on a single-node raft ledger on disk,
// metering, its JSON request log written to a file, and metrics; it runs
// twice, with its own HTTP/1.1 upstream client and with net/http's. Each
// cell (target x streaming x concurrency) runs for a bounded time in
// several interleaved rounds; medians are reported. Every response is
// validated: a JSON answer must carry the expected text, a stream must
// arrive whole.
//
//	go run ./bench/load -duration 2s -rounds 3 -concurrency 1,16,64
//	go run ./bench/load -profile /tmp/prof   # plus CPU and allocation profiles at c=16
//	go run ./bench/load -scale 1000          # N streams held open at once instead
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

type config struct {
	duration time.Duration
	rounds   int
	conc     []int
	targets  []string // "" : all
	profile  string   // directory for pistrad's profiles; "" : none
	base     string   // a pistrad binary measured beside this tree's; "" : none
	scale    scaleConfig
}

func main() {
	for env, serve := range map[string]func(string) error{revProxyEnv: serveReverseProxy, leanRelayEnv: serveLeanRelay} {
		if target := os.Getenv(env); target != "" {
			if err := serve(target); err != nil {
				fmt.Fprintln(os.Stderr, env, err)
				os.Exit(1)
			}
			return
		}
	}
	cfg, err := parseFlags()
	if err == nil {
		if cfg.scale.streams > 0 {
			err = benchScale(cfg)
		} else {
			err = bench(cfg)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseFlags() (config, error) {
	var c config
	var conc, targets string
	flag.DurationVar(&c.duration, "duration", 2*time.Second, "measured time per cell and round")
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds; medians are reported")
	flag.StringVar(&conc, "concurrency", "1,16,64", "client concurrency levels")
	flag.StringVar(&targets, "targets", "", "comma-separated targets to measure (default all; direct always runs)")
	flag.StringVar(&c.profile, "profile", "",
		"after the rounds, capture CPU and allocation profiles of pistrad (everything on) during one extra JSON and one SSE cell at c=16 (in scale mode: its heap with every stream open), into this `DIR` "+
			"(pistrad then samples allocations finely, which costs it CPU in the rounds too)")
	flag.StringVar(&c.base, "base-pistrad", "",
		"also measure this pistrad `BINARY` (e.g. built from the commit a change started from) as pistrad-base, everything on like pistrad")
	c.scale.register(flag.CommandLine)
	flag.Parse()
	for f := range strings.SplitSeq(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return c, fmt.Errorf("bad -concurrency %q", conc)
		}
		c.conc = append(c.conc, n)
	}
	if targets != "" {
		c.targets = strings.Split(targets, ",")
	}
	if c.rounds < 1 || c.duration <= 0 {
		return c, errors.New("-rounds and -duration must be positive")
	}
	return c, nil
}

// want reports whether the run measures the target named name.
func (c config) want(name string) bool {
	return name == "direct" || len(c.targets) == 0 || slices.Contains(c.targets, name)
}

func bench(cfg config) error {
	dir, err := os.MkdirTemp("", "pistra-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &rig{dir: dir, idle: max(512, slices.Max(cfg.conc))}
	if cfg.profile != "" {
		r.memProfileRate = profileMemRate // the rounds of a profiling run pay for it too
	}
	defer r.stop()
	targets, err := setUp(r, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("warming up; then %d rounds x %d cells of %s\n", cfg.rounds, 2*len(cfg.conc)*len(targets), cfg.duration)
	for _, t := range targets {
		for _, stream := range []bool{false, true} {
			if s := run(t, stream, 16, cfg.duration/4); s.errors > 0 {
				return fmt.Errorf("warm-up against %s: %v", t.name, s.firstErr)
			}
		}
	}
	res := newResults()
	for round := range cfg.rounds {
		for _, stream := range []bool{false, true} {
			for _, conc := range cfg.conc {
				for i := range targets {
					// Rotate the order so no target always runs first.
					t := targets[(i+round)%len(targets)]
					s := run(t, stream, conc, cfg.duration)
					if s.errors > 0 {
						return fmt.Errorf("%s stream=%v c=%d: %d invalid responses, e.g. %v", t.name, stream, conc, s.errors, s.firstErr)
					}
					res.add(cellKey{t.name, stream, conc}, round, s)
				}
			}
		}
	}
	res.print(cfg, targets)
	if cfg.profile != "" {
		return profile(cfg, targets)
	}
	return nil
}

// setUp builds and starts the fake and every gateway the run measures.
func setUp(r *rig, cfg config) ([]*target, error) {
	if err := r.build(); err != nil {
		return nil, err
	}
	base, err := r.fake("fakeprovider")
	if err != nil {
		return nil, err
	}
	bundle, err := writeBundle(r.dir, base)
	if err != nil {
		return nil, err
	}
	targets := []*target{direct(base)}
	for _, s := range gateways(base, bundle, slices.Max(cfg.conc), cfg.base) {
		if !cfg.want(s.name) {
			continue
		}
		t, err := s.start(r)
		if err != nil {
			return nil, err
		}
		if t == nil {
			skipped(s.name)
			continue
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		t.client = newClient(slices.Max(cfg.conc))
	}
	return targets, nil
}

// starter starts one gateway; it returns nil when the gateway is not
// installed.
type starter struct {
	name  string
	start func(*rig) (*target, error)
}

// gateways are the targets in front of the fake at base, each able to hold
// conns client connections at once.
func gateways(base, bundle string, conns int, basePistrad string) []starter {
	gs := []starter{
		{"pistrad", func(r *rig) (*target, error) { return r.pistrad("pistrad", bundle, budgetKey) }},
		// The same with net/http's Transport upstream instead of runtime/h1.
		{"pistrad-stdlib", func(r *rig) (*target, error) {
			return r.pistrad("pistrad-stdlib", bundle, budgetKey, "-stdlib-upstream-client")
		}},
		// No budget and no ledger (the log and metrics stay): what the
		// budget and the raft ledger add, read against "pistrad".
		{"pistrad-bare", func(r *rig) (*target, error) { return r.pistrad("pistrad-bare", bundle, benchKey, "-ledger-in-memory") }},
		{"reverseproxy", func(r *rig) (*target, error) { return r.relay("reverseproxy", revProxyEnv, base, "direct") }},
		{"leanrelay", func(r *rig) (*target, error) { return r.relay("leanrelay", leanRelayEnv, base, leanKey) }},
		{"nginx", func(r *rig) (*target, error) { return r.nginx("nginx", base, leanKey, conns) }},
	}
	if basePistrad != "" {
		gs = append(gs, starter{"pistrad-base", func(r *rig) (*target, error) {
			return r.pistradFrom(basePistrad, "pistrad-base", bundle, budgetKey)
		}})
	}
	return gs
}

func skipped(name string) {
	fmt.Printf("%s: not installed, skipped (make bench installs Debian's package when it runs as root)\n", name)
}
