package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
)

// report is what a run measured.
type report struct {
	cfg     config
	elapsed time.Duration
	sent    int
	counts  [numVerdicts]int
	// errorsBy counts clean errors by status ("stream": an error event).
	errorsBy map[string]int
	// sdkSent counts SDK requests; sdkDisagreed those whose SDK verdict
	// contradicted the bytes (success on an error, an error on a success).
	sdkSent      int
	sdkDisagreed []result
	bad          []result
	slowest      time.Duration
	before       snapshot
	after        snapshot
	settled      bool
	held         uint64
	series       map[string]float64
	injected     map[string]int64
	upCalls      int64
	// goroutineDump is pistrad's goroutine profile when they did not settle.
	goroutineDump string
	// pistradExit is how pistrad exited when stopped; pistradLog the
	// races, panics and fatal errors its log reports.
	pistradExit string
	pistradLog  []string
}

func (rep *report) add(results []result) {
	rep.errorsBy = map[string]int{}
	for _, r := range results {
		if !r.sent {
			continue
		}
		rep.sent++
		rep.counts[r.outcome.verdict]++
		rep.slowest = max(rep.slowest, r.took)
		if r.outcome.verdict == cleanError {
			rep.errorsBy[r.outcome.status]++
		}
		if r.outcome.verdict.bad() {
			rep.bad = append(rep.bad, r)
		}
		if r.spec.sdk {
			rep.sdkSent++
			if !r.sdkAgrees {
				rep.sdkDisagreed = append(rep.sdkDisagreed, r)
			}
		}
	}
}

func (rep *report) addFake(f *fake) {
	if rep.injected == nil {
		rep.injected = map[string]int64{}
	}
	for k, n := range f.injected {
		rep.injected[k] += n
	}
	rep.upCalls += f.calls
}

// failures lists why the run fails; none when the gateway held up.
func (rep *report) failures() []string {
	var out []string
	for v := hung; v < numVerdicts; v++ {
		if n := rep.counts[v]; n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, v))
		}
	}
	if n := len(rep.sdkDisagreed); n > 0 {
		out = append(out, fmt.Sprintf("%d SDK verdicts contradicting the bytes", n))
	}
	if !rep.settled {
		out = append(out, fmt.Sprintf("goroutines %d after the run, baseline %d (+%d slack), not back within %v",
			rep.after.goroutines, rep.before.goroutines, rep.cfg.slack, rep.cfg.settle))
	}
	if rep.held != 0 {
		out = append(out, fmt.Sprintf("%d budget units still held after every request ended", rep.held))
	}
	if n := rep.series["pistra_panics_total"]; n > 0 {
		out = append(out, fmt.Sprintf("%v panics in pistrad", n))
	}
	if len(rep.pistradLog) > 0 {
		out = append(out, fmt.Sprintf("pistrad's log reports %d races, panics or fatal errors (first: %s)", len(rep.pistradLog), rep.pistradLog[0]))
	}
	if rep.pistradExit != "exit status 0" {
		out = append(out, "pistrad did not stop cleanly: "+rep.pistradExit)
	}
	if rep.sent == 0 {
		out = append(out, "no request was sent")
	}
	return out
}

func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n%d requests in %v (%.0f/s), slowest %v; upstream calls %d, faults injected %d:",
		rep.sent, rep.elapsed.Round(time.Millisecond), float64(rep.sent)/rep.elapsed.Seconds(), rep.slowest.Round(time.Millisecond),
		rep.upCalls, sum(rep.injected))
	for _, k := range slices.Sorted(maps.Keys(rep.injected)) {
		fmt.Fprintf(w, " %s=%d", k, rep.injected[k])
	}
	fmt.Fprintln(w)
	for v := range numVerdicts {
		fmt.Fprintf(w, "  %-20s %6d", v, rep.counts[v])
		if v == cleanError {
			for _, k := range slices.Sorted(maps.Keys(rep.errorsBy)) {
				fmt.Fprintf(w, "  %s=%d", k, rep.errorsBy[k])
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %-20s %6d of %d disagreed with the bytes\n", "via the SDKs", len(rep.sdkDisagreed), rep.sdkSent)
	fmt.Fprintf(w, "pistrad: retries %v, failovers %v, stream failures %v, panics %v\n",
		rep.series["pistra_retry_total"], rep.series["pistra_failover_total"],
		rep.series["pistra_stream_failures_total"], rep.series["pistra_panics_total"])
	fmt.Fprintf(w, "pistrad goroutines: %d before, %d after (settled: %v); RSS: %.1f MiB before, %.1f MiB after; budget held after: %d; stopped: %s\n",
		rep.before.goroutines, rep.after.goroutines, rep.settled, mib(rep.before.rss), mib(rep.after.rss), rep.held, rep.pistradExit)
	for i, r := range rep.bad {
		if i == 20 {
			fmt.Fprintf(w, "  ... %d more\n", len(rep.bad)-20)
			break
		}
		fmt.Fprintf(w, "  BAD %s: %s after %v: %s\n", r.spec, r.outcome.verdict, r.took.Round(time.Millisecond), r.outcome.detail)
	}
	for i, r := range rep.sdkDisagreed {
		if i == 20 {
			break
		}
		fmt.Fprintf(w, "  SDK %s: bytes say %s (%s), the SDK said err=%v\n", r.spec, r.outcome.verdict, r.outcome.detail, r.sdkErr)
	}
	if rep.goroutineDump != "" {
		fmt.Fprintf(w, "pistrad goroutines left:\n%s\n", rep.goroutineDump)
	}
	if f := rep.failures(); len(f) > 0 {
		fmt.Fprintf(w, "FAIL (seed %d): %s\n", rep.cfg.seed, strings.Join(f, "; "))
	} else {
		fmt.Fprintf(w, "PASS (seed %d)\n", rep.cfg.seed)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// reportedSeries are the pistrad series the report sums.
var reportedSeries = []string{"pistra_retry_total", "pistra_failover_total", "pistra_stream_failures_total", "pistra_panics_total"}

func (r *rig) series() (map[string]float64, error) {
	m, err := r.scrape()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, name := range reportedSeries {
		out[name], _ = proc.SumSeries(m, name)
	}
	return out, nil
}

// getJSON GETs url (with a bearer token when given) on a connection of
// its own and decodes the answer into v.
func getJSON(url, token string, v any) error {
	body, err := proc.Get(url, token, 10*time.Second)
	if err != nil {
		return err
	}
	defer body.Close()
	return json.NewDecoder(body).Decode(v)
}
