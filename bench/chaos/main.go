// Command chaos runs pistrad against fake providers that fail at random
// and checks that every client gets a whole answer or a clean error:
//
//	go run ./bench/chaos -requests 3000 -concurrency 32 -seed 42
//
// Four fake provider processes (two per dialect) spoil a share of their
// calls with a fault drawn per call: 500, 502, 503, 529, 429, a connection
// reset before headers, a stall past the provider timeout, a stream cut
// after a few events, an error as a stream's first event or in its middle,
// a stream without its terminal event, a stall mid-stream, a body cut in
// half or stalled halfway. pistrad serves them from a policy with retries, failover chains
// that pass a closed port and end on a translated candidate, timeouts and a
// budget; mid-run each B fake is killed with SIGKILL and restarted on its
// port. The requests mix both dialects, streamed and not, raw and through
// the official SDKs; each is judged on the bytes its client received:
// served, clean error (by status), hung, empty reply, silently truncated,
// malformed error or corrupt answer; a few are given up by their client
// at a random moment, and only counted. After the run pistrad's goroutines
// must come back to their baseline, its budget must hold nothing, and it
// must stop cleanly with no race, panic or fatal error in its log.
//
// The requests and the faults are drawn from -seed (printed first), so a
// failing run is repeated with the same -seed and -requests. The exit
// status is 1 when any request went wrong.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	rep, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if len(rep.failures()) > 0 {
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	c := config{out: os.Stdout}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.IntVar(&c.requests, "requests", 3000, "requests to send")
	fs.IntVar(&c.concurrency, "concurrency", 32, "requests in flight at once")
	fs.DurationVar(&c.duration, "duration", 3*time.Minute, "bound on the run: no request starts after it")
	fs.Uint64Var(&c.seed, "seed", uint64(time.Now().UnixNano()), "seed of the requests and the faults (default: the clock)")
	fs.Float64Var(&c.rate, "rate", 0.3, "share of upstream calls that get a fault")
	fs.DurationVar(&c.timeout, "timeout", time.Second, "every provider's timeout; stalls last 2.5 times it")
	fs.DurationVar(&c.hang, "hang", 30*time.Second, "a request taking longer than this counts as hung")
	fs.DurationVar(&c.pace, "pace", 2*time.Millisecond, "the fakes' wait between stream events")
	fs.Float64Var(&c.sdkShare, "sdk-share", 0.2, "share of requests sent through the official SDKs")
	fs.Float64Var(&c.abandonShare, "abandon-share", 0.05, "share of raw requests their client gives up on at a random moment")
	fs.BoolVar(&c.kill, "kill", true, "kill -9 and restart a fake of each dialect mid-run")
	fs.BoolVar(&c.race, "race", false, "build pistrad with the race detector")
	fs.DurationVar(&c.settle, "settle", 10*time.Second, "how long pistrad's goroutines may take to return to baseline after the run")
	fs.IntVar(&c.slack, "slack", 5, "goroutines above the baseline still counted as back")
	extra := fs.String("pistrad-args", "", "extra pistrad flags, space-separated (e.g. -stdlib-upstream-client)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.pistradArgs = strings.Fields(*extra)
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case c.requests < 1 || c.concurrency < 1 || c.duration <= 0 || c.timeout <= 0:
		return c, errors.New("-requests, -concurrency, -duration and -timeout must be positive")
	case c.hang < 4*c.timeout:
		return c, errors.New("-hang must be well above -timeout (at least 4 times)")
	case !isShare(c.rate) || !isShare(c.sdkShare) || !isShare(c.abandonShare):
		return c, errors.New("-rate, -sdk-share and -abandon-share are shares (0..1)")
	}
	return c, nil
}

func isShare(f float64) bool { return f >= 0 && f <= 1 }
