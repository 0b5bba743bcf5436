package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
	"github.com/pistra/pistra/internal/fakeprovider"
)

// scaleConfig is the scale mode: N streams held open at once.
type scaleConfig struct {
	streams    int
	chunkDelay time.Duration
	ramp       time.Duration
}

func (c *scaleConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.streams, "scale", 0,
		"instead of the request cells, hold this many streams open at once against pistrad (everything on), the lean relay and nginx, "+
			"and report RSS, CPU and goroutines per open stream and time to first byte (0: off)")
	fs.DurationVar(&c.chunkDelay, "scale-chunk-delay", 250*time.Millisecond,
		"the fake's pause between a scale stream's 17 events (the default holds each stream open 4 s)")
	fs.DurationVar(&c.ramp, "scale-ramp", time.Second,
		"the scale streams start evenly over this time, so time to first byte is the gateway's rather than a burst of connects; keep it well under a stream's length")
}

// scaleTargets are measured in scale mode unless -targets names others.
var scaleTargets = []string{"pistrad", "leanrelay", "nginx"}

// scaleSample is one target's figures with all N streams open.
type scaleSample struct {
	idleRSS, openRSS int64
	idleG, openG     float64 // goroutines; -1 when the gateway does not say
	// Go's stack and heap bytes in use; -1 when the gateway does not say.
	idleStack, openStack, idleHeap, openHeap float64
	cpu                                      time.Duration
	ttfb                                     []time.Duration
	early                                    int // streams that ended before the last one opened
}

func benchScale(cfg config) error {
	n := cfg.scale.streams
	if err := raiseFileLimit(uint64(n) + 256); err != nil {
		return err
	}
	if len(cfg.targets) == 0 {
		cfg.targets = scaleTargets
	}
	dir, err := os.MkdirTemp("", "pistra-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &rig{dir: dir, idle: n}
	defer r.stop()
	if err := r.build(); err != nil {
		return err
	}
	base, err := r.fake("fakeprovider")
	if err != nil {
		return err
	}
	bundle, err := writeBundle(dir, base)
	if err != nil {
		return err
	}
	var names []string
	res := map[string][]scaleSample{}
	for round := range cfg.rounds {
		// Each gateway fresh each round, alone: its idle RSS is a new
		// process's, not one a previous round's peak left grown.
		all := append([]starter{{"direct", func(*rig) (*target, error) { return direct(base), nil }}}, gateways(base, bundle, n, cfg.base)...)
		for _, s := range all {
			if !cfg.want(s.name) {
				continue
			}
			sub := &rig{dir: dir, idle: n}
			if cfg.profile != "" {
				sub.memProfileRate = profileMemRate // a heap profile fine enough to see a stream's kilobytes
			}
			t, err := s.start(sub)
			if err == nil && t == nil {
				if round == 0 {
					skipped(s.name)
				}
				continue
			}
			var smp scaleSample
			if err == nil {
				smp, err = scaleRun(t, base, cfg.scale, heapProfile(cfg, t, round))
			}
			sub.stop()
			if err != nil {
				return fmt.Errorf("scale %s: %w", s.name, err)
			}
			if round == 0 {
				names = append(names, s.name)
			}
			res[s.name] = append(res[s.name], smp)
		}
	}
	printScale(n, names, res)
	return nil
}

// scaleRun warms t up on quick streams, reads its idle figures, then opens
// n slow streams at once and samples it while all are open.
func scaleRun(t *target, base string, c scaleConfig, heapFile string) (scaleSample, error) {
	var s scaleSample
	n := c.streams
	t.client = newClient(n)
	defer t.client.CloseIdleConnections()
	if err := setChunkDelay(base, 0); err != nil {
		return s, err
	}
	if w := run(t, true, 16, 500*time.Millisecond); w.errors > 0 {
		return s, fmt.Errorf("warm-up: %v", w.firstErr)
	}
	t.client.CloseIdleConnections()
	time.Sleep(time.Second) // the warm-up's connections closed on the gateway's side too
	s.idleRSS, _ = treeRSS(t.pid)
	s.idleG = gauge(t, "go_goroutines")
	s.idleStack, s.idleHeap = gauge(t, "go_memstats_stack_inuse_bytes"), gauge(t, "go_memstats_heap_inuse_bytes")
	if err := setChunkDelay(base, c.chunkDelay); err != nil {
		return s, err
	}
	defer setChunkDelay(base, 0) //nolint:errcheck // the next run sets it again and reports
	body := requestBody(t.model, true)
	want := fakeprovider.ReplyText(prompt)
	var opened, finished atomic.Int64
	ttfbs := make([]time.Duration, n)
	errs := make([]error, n)
	done := make(chan struct{})
	cpu0 := gatewayCPU(t.pid)
	start := time.Now()
	for i := range n {
		go func() {
			time.Sleep(time.Until(start.Add(c.ramp * time.Duration(i) / time.Duration(n))))
			defer func() {
				if finished.Add(1) == int64(n) {
					close(done)
				}
			}()
			_, ttfbs[i], errs[i] = one(t, body, true, want, func() { opened.Add(1) })
		}()
	}
	s.early = s.sampleOpen(t, n, &opened, &finished)
	var profErr error
	if heapFile != "" && s.early == 0 {
		// What the heap holds with every stream open, taken after the
		// peak RSS was read so the profile's own cost is not in it.
		profErr = fetchProfile(t.admin+"/debug/pprof/heap", 0, heapFile)
	}
	<-done
	s.cpu = gatewayCPU(t.pid).Total() - cpu0.Total()
	if err := errors.Join(append(errs, profErr)...); err != nil {
		return s, err
	}
	s.ttfb = ttfbs
	slices.Sort(s.ttfb)
	return s, nil
}

// heapProfile names the file for t's heap profile with every stream open
// (pistrad only, with -profile), or "" for none.
func heapProfile(cfg config, t *target, round int) string {
	if cfg.profile == "" || t.admin == "" {
		return ""
	}
	return filepath.Join(cfg.profile, fmt.Sprintf("%s-scale%d-round%d.heap.pprof", t.name, cfg.scale.streams, round))
}

// sampleOpen waits for all n streams to have their first byte, then
// samples the gateway until the next one ends: the peak RSS, and its
// goroutines once. It returns how many streams had already ended when it
// began (0 when all were open at once).
func (s *scaleSample) sampleOpen(t *target, n int, opened, finished *atomic.Int64) int {
	deadline := time.Now().Add(time.Minute)
	for opened.Load() < int64(n) && finished.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	early := finished.Load()
	s.openG = gauge(t, "go_goroutines")
	s.openStack, s.openHeap = gauge(t, "go_memstats_stack_inuse_bytes"), gauge(t, "go_memstats_heap_inuse_bytes")
	for finished.Load() == early && early < int64(n) && time.Now().Before(deadline) {
		if rss, err := treeRSS(t.pid); err == nil {
			s.openRSS = max(s.openRSS, rss)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return int(early)
}

func treeRSS(pid int) (int64, error) {
	if pid == 0 {
		return 0, nil
	}
	return proc.TreeRSS(pid)
}

// setChunkDelay sets the fake's pause between stream events.
func setChunkDelay(base string, d time.Duration) error {
	body := fmt.Sprintf(`{"chunk_delay":%q}`, d.String())
	resp, err := http.Post(strings.TrimSuffix(base, "/v1")+"/_fake/faults", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		return fmt.Errorf("set the fake's chunk delay: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("set the fake's chunk delay: %s", resp.Status)
	}
	return nil
}

// raiseFileLimit lifts this process's open-file limit to need (each stream
// is a client connection here), within the hard limit.
func raiseFileLimit(need uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur >= need {
		return nil
	}
	if l.Max < need {
		return fmt.Errorf("-scale needs %d open files and the hard limit is %d: raise it (ulimit -Hn) or lower -scale", need, l.Max)
	}
	l.Cur = need
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}

// printScale writes the medians over rounds of each target's figures per
// open stream.
func printScale(n int, names []string, res map[string][]scaleSample) {
	fmt.Printf("\n%d streams open at once (medians over %d rounds)\n", n, len(res[names[0]]))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "target\tidle RSS MiB\topen RSS MiB\tKiB/stream\tCPU µs/stream\tgoroutines/stream\tstack KiB/stream\theap KiB/stream\tTTFB p50 ms\tTTFB p99 ms\tnot all open\t")
	for _, name := range names {
		ss := res[name]
		f := func(g func(scaleSample) float64) float64 {
			xs := make([]float64, len(ss))
			for i, s := range ss {
				xs[i] = g(s)
			}
			return median(xs)
		}
		mib := func(b int64) float64 { return float64(b) / (1 << 20) }
		cols := []string{name, "-", "-", "-", "-", "-", "-", "-"}
		if name != "direct" {
			cols[1] = fmt.Sprintf("%.1f", f(func(s scaleSample) float64 { return mib(s.idleRSS) }))
			cols[2] = fmt.Sprintf("%.1f", f(func(s scaleSample) float64 { return mib(s.openRSS) }))
			cols[3] = fmt.Sprintf("%.1f", f(func(s scaleSample) float64 { return float64(s.openRSS-s.idleRSS) / 1024 / float64(n) }))
			cols[4] = fmt.Sprintf("%.0f", f(func(s scaleSample) float64 { return float64(s.cpu) / float64(time.Microsecond) / float64(n) }))
			if ss[0].idleG >= 0 {
				cols[5] = fmt.Sprintf("%.2f", f(func(s scaleSample) float64 { return (s.openG - s.idleG) / float64(n) }))
			}
			if ss[0].idleStack >= 0 && ss[0].idleHeap >= 0 {
				cols[6] = fmt.Sprintf("%.1f", f(func(s scaleSample) float64 { return (s.openStack - s.idleStack) / 1024 / float64(n) }))
				cols[7] = fmt.Sprintf("%.1f", f(func(s scaleSample) float64 { return (s.openHeap - s.idleHeap) / 1024 / float64(n) }))
			}
		}
		cols = append(cols,
			fmtMS(f(func(s scaleSample) float64 { return float64(percentile(s.ttfb, .50)) })),
			fmtMS(f(func(s scaleSample) float64 { return float64(percentile(s.ttfb, .99)) })),
			fmt.Sprint(slices.Max(pickEarly(ss))))
		fmt.Fprintln(w, strings.Join(cols, "\t")+"\t")
	}
	w.Flush()
}

func pickEarly(ss []scaleSample) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = s.early
	}
	return out
}
