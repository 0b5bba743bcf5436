package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
)

// config is one chaos run.
type config struct {
	requests    int
	concurrency int
	// duration bounds the run: no request starts after it.
	duration time.Duration
	seed     uint64
	// rate is the share of upstream calls each fake spoils.
	rate float64
	// timeout is every provider's timeout in the policy; the stall faults
	// hold answers for stallFactor times it.
	timeout time.Duration
	// hang is how long a request may take before it counts as hung.
	hang time.Duration
	// pace is the fakes' wait between stream events, so streams are in
	// flight when a fake is killed.
	pace     time.Duration
	sdkShare float64
	// abandonShare of the raw requests are given up by their client.
	abandonShare float64
	// kill: kill -9 each B fake once mid-run and restart it on its port.
	kill bool
	// race builds pistrad with the race detector.
	race bool
	// settle bounds the wait for pistrad's goroutines to return to their
	// baseline after the run; slack is how many above it still count.
	settle time.Duration
	slack  int
	// pistradArgs are extra pistrad flags, e.g. -stdlib-upstream-client.
	pistradArgs []string
	out         io.Writer
}

const stallFactor = 2.5

// fake is one fake provider process; B fakes are the ones killed.
type fake struct {
	name    string
	dialect string // the fakeprovider flag: openai or anthropic
	keyEnv  string
	seed    uint64
	p       *proc.Proc
	addr    string
	// injected sums the faults of the fake's earlier lives.
	injected map[string]int64
	calls    int64
}

// rig is what a run stands on: the fakes and pistrad.
type rig struct {
	cfg     config
	dir     string
	fakes   []*fake
	pistrad *proc.Proc
	public  string // http://host:port
	admin   string
}

const adminToken = "chaos-admin"

func setUp(cfg config, dir string) (*rig, error) {
	var flags []string
	if cfg.race {
		flags = []string{"-race"}
	}
	if err := proc.Build(dir, flags, "./cmd/pistrad", "./cmd/fakeprovider"); err != nil {
		return nil, err
	}
	r := &rig{cfg: cfg, dir: dir}
	for i, f := range []*fake{
		{name: "oa-a", dialect: "openai", keyEnv: "CHAOS_OA_A_KEY"},
		{name: "oa-b", dialect: "openai", keyEnv: "CHAOS_OA_B_KEY"},
		{name: "an-a", dialect: "anthropic", keyEnv: "CHAOS_AN_A_KEY"},
		{name: "an-b", dialect: "anthropic", keyEnv: "CHAOS_AN_B_KEY"},
	} {
		// Each fake its own seed, so no two fail the same request alike.
		f.seed, f.addr, f.injected = cfg.seed+uint64(i)+1, "127.0.0.1:0", map[string]int64{}
		r.fakes = append(r.fakes, f)
		if err := r.startFake(f, f.name); err != nil {
			return r, err
		}
	}
	dead, err := closedPort()
	if err != nil {
		return r, err
	}
	u := upstreams{oaA: r.fakes[0].base(), oaB: r.fakes[1].base(), anA: r.fakes[2].base(), anB: r.fakes[3].base(), dead: "http://" + dead + "/v1"}
	bundle, err := writePolicy(dir, u, cfg.timeout)
	if err != nil {
		return r, err
	}
	args := []string{"-bundle", bundle, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
		"-ledger-in-memory", "-max-retry-wait", "100ms", "-shutdown-grace", "5s"}
	cmd := exec.Command(dir+"/pistrad", append(args, cfg.pistradArgs...)...)
	cmd.Env = append(os.Environ(), "PISTRA_ADMIN_TOKEN="+adminToken)
	for k, v := range upstreamKeys {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p, err := proc.Start(dir, "pistrad", cmd, `"msg":"listening"`, func(l string) string { return l })
	if err != nil {
		return r, err
	}
	r.pistrad, r.public, r.admin = p, "http://"+proc.Field(p.Addr, "public"), "http://"+proc.Field(p.Addr, "admin")
	return r, nil
}

func (f *fake) base() string { return "http://" + f.addr + "/v1" }

// startFake starts f on f.addr (its first life picks a port; later lives
// take the same one), with its chaos flags. logName names its log file.
func (r *rig) startFake(f *fake, logName string) error {
	cmd := exec.Command(r.dir+"/fakeprovider", "-"+f.dialect, f.addr, "-record", "0",
		"-"+f.dialect+"-key", upstreamKeys[f.keyEnv],
		"-chaos-rate", strconv.FormatFloat(r.cfg.rate, 'f', -1, 64), "-chaos-seed", strconv.FormatUint(f.seed, 10),
		"-chaos-stall", time.Duration(float64(r.cfg.timeout)*stallFactor).String(), "-chunk-delay", r.cfg.pace.String())
	p, err := proc.Start(r.dir, logName, cmd, "fake provider serving", func(l string) string { return proc.Field(l, "base_url") })
	if err != nil {
		return err
	}
	f.p = p
	f.addr = p.Addr[len("http://") : len(p.Addr)-len("/v1")]
	return nil
}

// killAndRestart kills f with SIGKILL, leaves its port closed for down
// (calls to it are refused), and starts it again on the same port.
func (r *rig) killAndRestart(f *fake, life int, down time.Duration) error {
	r.collectChaos(f) // what this life injected, before it is lost
	f.p.Kill()
	time.Sleep(down)
	var err error
	for range 50 { // the port is ours again at once, unless something raced for it
		if err = r.startFake(f, fmt.Sprintf("%s-life%d", f.name, life)); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("restart %s on %s: %w", f.name, f.addr, err)
}

// collectChaos adds what f's current life injected to its totals.
func (r *rig) collectChaos(f *fake) {
	var got struct {
		Injected map[string]int64 `json:"injected"`
		Calls    int64            `json:"calls"`
	}
	if err := getJSON("http://"+f.addr+"/_fake/chaos", "", &got); err != nil {
		fmt.Fprintf(r.cfg.out, "warning: %s's fault counts: %v\n", f.name, err)
		return
	}
	for k, n := range got.Injected {
		f.injected[k] += n
	}
	f.calls += got.Calls
}

func (r *rig) tearDown() {
	if r.pistrad != nil {
		r.pistrad.Stop()
	}
	r.stopFakes()
}

// stopFakes stops the fakes, first counting what each injected.
func (r *rig) stopFakes() {
	for _, f := range r.fakes {
		if f.p != nil {
			r.collectChaos(f)
			f.p.Stop()
			f.p = nil
		}
	}
}

func closedPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// drive sends the run's requests from cfg.concurrency workers and returns
// the outcome of each one sent; a request not sent before the duration
// ran out has none. At 30% and 60% of the requests it kills a B fake.
func (r *rig) drive(client *http.Client, sdk *sdkClients) ([]result, []error) {
	cfg := r.cfg
	results := make([]result, cfg.requests)
	var next atomic.Int64
	deadline := time.Now().Add(cfg.duration)
	var wg sync.WaitGroup
	var errs []error
	var errMu sync.Mutex
	if cfg.kill {
		down := max(500*time.Millisecond, 2*cfg.timeout)
		for i, f := range []*fake{r.fakes[1], r.fakes[3]} {
			at := int64(cfg.requests * (3 + 3*i) / 10)
			wg.Go(func() {
				for next.Load() < at && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if !time.Now().Before(deadline) {
					return
				}
				fmt.Fprintf(cfg.out, "kill -9 %s (pid %d) at request %d; restarting on %s after %v\n", f.name, f.p.Cmd.Process.Pid, next.Load(), f.addr, down)
				if err := r.killAndRestart(f, 2, down); err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}
			})
		}
	}
	for range cfg.concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.requests || !time.Now().Before(deadline) {
					return
				}
				s := newSpec(cfg, i)
				start := time.Now()
				res := result{spec: s, sent: true}
				if s.sdk {
					res.outcome, res.sdkAgrees, res.sdkErr = sdk.sendSDK(s, cfg.hang)
				} else {
					res.outcome, res.sdkAgrees = sendRaw(client, r.public, s, cfg.hang), true
				}
				res.took = time.Since(start)
				results[i] = res
			}
		})
	}
	wg.Wait()
	return results, errs
}

// result is one request's outcome.
type result struct {
	spec      spec
	sent      bool
	outcome   outcome
	sdkAgrees bool
	sdkErr    error
	took      time.Duration
}

// run sets up, drives and measures one chaos run and writes its report.
// It returns the report, and an error when the rig failed (not when the
// gateway misbehaved: the report says that).
func run(cfg config) (*report, error) {
	dir, err := os.MkdirTemp("", "pistra-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(cfg.out, "chaos: seed %d, %d requests, concurrency %d, fault rate %.2f, provider timeout %v, stalls %v, hang bound %v\n",
		cfg.seed, cfg.requests, cfg.concurrency, cfg.rate, cfg.timeout, time.Duration(float64(cfg.timeout)*stallFactor), cfg.hang)
	r, err := setUp(cfg, dir)
	defer r.tearDown()
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{MaxIdleConnsPerHost: cfg.concurrency, DisableCompression: true}
	client := &http.Client{Transport: transport}
	sdk := newSDKClients(r.public, transport)
	rep := &report{cfg: cfg}
	if rep.before, err = r.measure(transport); err != nil {
		return nil, err
	}
	start := time.Now()
	results, rigErrs := r.drive(client, sdk)
	rep.elapsed = time.Since(start)
	if err := errors.Join(rigErrs...); err != nil {
		return nil, err
	}
	select {
	case <-r.pistrad.Exited:
		b, _ := os.ReadFile(r.pistrad.Log)
		return nil, fmt.Errorf("pistrad exited during the run (%v); its log ends:\n%s", r.pistrad.Cmd.ProcessState, tail(b, 4000))
	default:
	}
	rep.add(results)
	if slices.Contains(cfg.pistradArgs, "-stdlib-upstream-client") {
		// net/http's Transport keeps two goroutines per pooled upstream
		// connection (pistra's own client keeps none): the fakes go first,
		// closing the pool, so what stays is what nothing holds.
		r.stopFakes()
	}
	rep.after, rep.settled, err = r.settle(transport, rep.before.goroutines)
	if err != nil {
		return nil, err
	}
	if !rep.settled {
		rep.goroutineDump = r.goroutineDump()
	}
	if rep.held, err = r.heldBudget(); err != nil {
		return nil, err
	}
	if rep.series, err = r.series(); err != nil {
		return nil, err
	}
	r.stopFakes()
	for _, f := range r.fakes {
		rep.addFake(f)
	}
	rep.pistradExit, rep.pistradLog = r.stopPistrad()
	rep.print(cfg.out)
	return rep, nil
}

// stopPistrad interrupts pistrad and returns how it exited and what its
// log says went wrong: data races (a -race build), panics, fatal errors.
func (r *rig) stopPistrad() (exit string, troubles []string) {
	p := r.pistrad
	r.pistrad = nil
	p.Stop()
	b, _ := os.ReadFile(p.Log)
	for line := range strings.Lines(string(b)) {
		for _, sign := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
			if strings.HasPrefix(line, sign) {
				troubles = append(troubles, strings.TrimSpace(line))
			}
		}
	}
	if len(troubles) > 0 {
		fmt.Fprintf(r.cfg.out, "pistrad's log:\n%s\n", tail(b, 8000))
	}
	return p.Cmd.ProcessState.String(), troubles
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }
