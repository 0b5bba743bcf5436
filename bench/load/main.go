// Command load measures what pistrad costs in front of an upstream, against
// the same fake upstream reached directly and through a bare
// httputil.ReverseProxy, in one run, with budgets kept in memory and on the
// raft ledger: added latency (p50, p99), time to first
// byte for streams, requests per second, and the gateway process's CPU time
// per request (utime+stime from /proc over the window / requests). Each
// cell (mode x streaming x concurrency) runs for a bounded time in several
// interleaved rounds; medians are reported. Every response is validated: a
// JSON answer must carry the expected text, a stream must arrive whole.
//
//	go run ./bench/load -duration 2s -rounds 3 -concurrency 1,16,64
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
)

type config struct {
	duration time.Duration
	rounds   int
	conc     []int
}

func main() {
	if target := os.Getenv(revProxyEnv); target != "" {
		if err := serveReverseProxy(target); err != nil {
			fmt.Fprintln(os.Stderr, "reverse proxy:", err)
			os.Exit(1)
		}
		return
	}
	if target := os.Getenv(leanRelayEnv); target != "" {
		if err := serveLeanRelay(target); err != nil {
			fmt.Fprintln(os.Stderr, "lean relay:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags()
	if err == nil {
		err = bench(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseFlags() (config, error) {
	var c config
	var conc string
	flag.DurationVar(&c.duration, "duration", 2*time.Second, "measured time per cell and round")
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds; medians are reported")
	flag.StringVar(&conc, "concurrency", "1,16,64", "client concurrency levels")
	flag.Parse()
	for f := range strings.SplitSeq(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return c, fmt.Errorf("bad -concurrency %q", conc)
		}
		c.conc = append(c.conc, n)
	}
	if c.rounds < 1 || c.duration <= 0 {
		return c, errors.New("-rounds and -duration must be positive")
	}
	return c, nil
}

func bench(cfg config) error {
	dir, err := os.MkdirTemp("", "pistra-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	targets, procs, err := setUp(dir, slices.Max(cfg.conc))
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
	}()
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
					// Rotate the order so no mode always runs first.
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
	return nil
}

// setUp builds and starts the fake, pistrad (twice: in-memory budgets, and
// a single-node raft ledger), the reverse proxy and the lean relay.
func setUp(dir string, maxConc int) ([]*target, []*proc.Proc, error) {
	var procs []*proc.Proc
	if err := proc.Build(dir, nil, "./cmd/pistrad", "./cmd/fakeprovider"); err != nil {
		return nil, nil, err
	}
	fake, err := proc.Start(dir, "fakeprovider", exec.Command(dir+"/fakeprovider", "-openai", "127.0.0.1:0", "-record", "0"),
		"fake provider serving", func(l string) string { return proc.Field(l, "base_url") })
	if err != nil {
		return nil, procs, err
	}
	procs = append(procs, fake)
	base := fake.Addr // http://127.0.0.1:port/v1
	bundle, err := writeBundle(dir, base)
	if err != nil {
		return nil, procs, err
	}
	pd := exec.Command(dir+"/pistrad", "-bundle", bundle, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-ledger-in-memory",
		"-max-idle-conns-per-host", "512")
	pd.Env = append(os.Environ(), "PISTRA_BENCH_UPSTREAM_KEY=bench-upstream", "PISTRA_ADMIN_TOKEN=bench-admin")
	pistrad, err := proc.Start(dir, "pistrad", pd, `"msg":"listening"`, func(l string) string { return proc.Field(l, "public") })
	if err != nil {
		return nil, procs, err
	}
	procs = append(procs, pistrad)
	// The same again on a raft ledger (a single node, on disk), so the
	// budget's cost is read with either ledger behind it in one run.
	pr := exec.Command(dir+"/pistrad", "-bundle", bundle, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
		"-max-idle-conns-per-host", "512", "-ledger-dir", dir+"/ledger")
	pr.Env = pd.Env
	raftd, err := proc.Start(dir, "pistrad-raft", pr, `"msg":"listening"`, func(l string) string { return proc.Field(l, "public") })
	if err != nil {
		return nil, procs, err
	}
	procs = append(procs, raftd)
	self, err := os.Executable()
	if err != nil {
		return nil, procs, err
	}
	listening := func(l string) string { return strings.TrimPrefix(l, "listening ") }
	rc := exec.Command(self)
	rc.Env = append(os.Environ(), revProxyEnv+"="+strings.TrimSuffix(base, "/v1"))
	rp, err := proc.Start(dir, "reverseproxy", rc, "listening ", listening)
	if err != nil {
		return nil, procs, err
	}
	procs = append(procs, rp)
	lc := exec.Command(self)
	lc.Env = append(os.Environ(), leanRelayEnv+"="+strings.TrimSuffix(base, "/v1"))
	lean, err := proc.Start(dir, "leanrelay", lc, "listening ", listening)
	if err != nil {
		return nil, procs, err
	}
	procs = append(procs, lean)
	targets := []*target{
		{name: "direct", url: base + "/chat/completions", model: "gpt-4o-mini", key: "direct", client: newClient(maxConc)},
		{name: "pistrad", url: "http://" + pistrad.Addr + "/v1/chat/completions", model: "fast", key: benchKey,
			pid: pistrad.Cmd.Process.Pid, client: newClient(maxConc)},
		{name: "pistrad+budget", url: "http://" + pistrad.Addr + "/v1/chat/completions", model: "fast", key: budgetKey,
			pid: pistrad.Cmd.Process.Pid, client: newClient(maxConc)},
		{name: "pistrad+raft", url: "http://" + raftd.Addr + "/v1/chat/completions", model: "fast", key: budgetKey,
			pid: raftd.Cmd.Process.Pid, client: newClient(maxConc)},
		{name: "reverseproxy", url: "http://" + rp.Addr + "/v1/chat/completions", model: "gpt-4o-mini", key: "direct",
			pid: rp.Cmd.Process.Pid, client: newClient(maxConc)},
		{name: "leanrelay", url: "http://" + lean.Addr + "/v1/chat/completions", model: "gpt-4o-mini", key: "direct",
			pid: lean.Cmd.Process.Pid, client: newClient(maxConc)},
	}
	return targets, procs, nil
}
