package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

type cellKey struct {
	target string
	stream bool
	conc   int
}

// round is one cell's figures in one round.
type round struct {
	rps               float64
	p50, p99, ttfb50  time.Duration
	cpuPerReq         time.Duration
	userShare         float64 // of cpuPerReq: the gateway's own code, not the kernel's
	syscallsPerReq    float64
	allocsPerReq      float64 // -1: the gateway does not say
	addedP50, addedP9 time.Duration
}

type results struct {
	cells map[cellKey][]round
	// direct holds the direct p50/p99 of each (stream, conc, round), the
	// baseline added latency is measured against.
	direct map[cellKey]map[int][2]time.Duration
}

func newResults() *results {
	return &results{cells: map[cellKey][]round{}, direct: map[cellKey]map[int][2]time.Duration{}}
}

func (r *results) add(k cellKey, n int, s sample) {
	rd := round{
		rps:          float64(s.requests) / s.elapsed.Seconds(),
		p50:          percentile(s.lat, .50),
		p99:          percentile(s.lat, .99),
		ttfb50:       percentile(s.ttfb, .50),
		allocsPerReq: -1,
	}
	if s.requests > 0 {
		rd.cpuPerReq = s.cpu / time.Duration(s.requests)
		if s.cpu > 0 {
			rd.userShare = float64(s.user) / float64(s.cpu)
		}
		rd.syscallsPerReq = float64(s.syscalls) / float64(s.requests)
		if s.allocs >= 0 {
			rd.allocsPerReq = s.allocs / float64(s.requests)
		}
	}
	base := cellKey{"direct", k.stream, k.conc}
	if k.target == "direct" {
		if r.direct[base] == nil {
			r.direct[base] = map[int][2]time.Duration{}
		}
		r.direct[base][n] = [2]time.Duration{rd.p50, rd.p99}
	}
	r.cells[k] = append(r.cells[k], rd)
	// Added latency needs the same round's direct figures; rounds rotate
	// the order, so settle it once every target of the round is in.
	if d, ok := r.direct[base][n]; ok {
		for ck, rs := range r.cells {
			if ck.target != "direct" && ck.stream == k.stream && ck.conc == k.conc && len(rs) == n+1 {
				rs[n].addedP50, rs[n].addedP9 = rs[n].p50-d[0], rs[n].p99-d[1]
			}
		}
	}
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// med is the median over rounds of one figure of a cell; ok is false when
// the cell was not measured.
func (r *results) med(k cellKey, f func(round) float64) (float64, bool) {
	rs := r.cells[k]
	if len(rs) == 0 {
		return 0, false
	}
	xs := make([]float64, len(rs))
	for i, x := range rs {
		xs[i] = f(x)
	}
	return median(xs), true
}

// spread is num's figure over den's in each round both cells ran (the
// same round's pair ran minutes apart at most, so a drift of the
// machine's speed cancels out of it), as "min–max"; "-" when a cell is
// missing.
func (r *results) spread(num, den cellKey, f func(round) float64) string {
	a, b := r.cells[num], r.cells[den]
	var lo, hi float64
	for i := range min(len(a), len(b)) {
		q := f(a[i]) / f(b[i])
		if i == 0 || q < lo {
			lo = q
		}
		if i == 0 || q > hi {
			hi = q
		}
	}
	return cond(len(a) > 0 && len(b) > 0, fmt.Sprintf("%.2f–%.2f", lo, hi))
}

func dur(f func(round) time.Duration) func(round) float64 {
	return func(x round) float64 { return float64(f(x)) }
}

func cpuUS(x round) float64  { return float64(x.cpuPerReq) / float64(time.Microsecond) }
func allocs(x round) float64 { return x.allocsPerReq }

func fmtMS(v float64) string { return fmt.Sprintf("%.3f", v/float64(time.Millisecond)) }

// print writes every cell's medians, then CPU per request target by
// target, the ratios the issue sets, and the added latency at c=1.
func (r *results) print(cfg config, targets []*target) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "target\tstream\tconc\treq/s\tp50 ms\tp99 ms\tadded p50 ms\tadded p99 ms\tTTFB p50 ms\tCPU µs/req\tuser %%\tread+write calls/req\tallocs/req\t\n")
	for _, stream := range []bool{false, true} {
		for _, conc := range cfg.conc {
			for _, t := range targets {
				k := cellKey{t.name, stream, conc}
				cols := []string{t.name, fmt.Sprint(stream), fmt.Sprint(conc)}
				rps, _ := r.med(k, func(x round) float64 { return x.rps })
				p50, _ := r.med(k, dur(func(x round) time.Duration { return x.p50 }))
				p99, _ := r.med(k, dur(func(x round) time.Duration { return x.p99 }))
				cols = append(cols, fmt.Sprintf("%.0f", rps), fmtMS(p50), fmtMS(p99))
				a50, a99, ttfb, cpu, user, sc, al := "-", "-", "-", "-", "-", "-", "-"
				if t.name != "direct" {
					v, _ := r.med(k, dur(func(x round) time.Duration { return x.addedP50 }))
					a50 = fmtMS(v)
					v, _ = r.med(k, dur(func(x round) time.Duration { return x.addedP9 }))
					a99 = fmtMS(v)
					v, _ = r.med(k, cpuUS)
					cpu = fmt.Sprintf("%.1f", v)
					v, _ = r.med(k, func(x round) float64 { return x.userShare })
					user = fmt.Sprintf("%.0f", 100*v)
					v, _ = r.med(k, func(x round) float64 { return x.syscallsPerReq })
					sc = fmt.Sprintf("%.1f", v)
				}
				if stream {
					v, _ := r.med(k, dur(func(x round) time.Duration { return x.ttfb50 }))
					ttfb = fmtMS(v)
				}
				if v, _ := r.med(k, allocs); v >= 0 && t.name != "direct" {
					al = fmt.Sprintf("%.0f", v)
				}
				fmt.Fprintln(w, strings.Join(append(cols, a50, a99, ttfb, cpu, user, sc, al), "\t")+"\t")
			}
		}
	}
	w.Flush()
	r.printSummary(cfg, targets)
}

// printSummary sets the figures side by side: CPU per request,
// the ratios, and the added p50 at c=1 with their limits.
func (r *results) printSummary(cfg config, targets []*target) {
	cells := r.cellHeads(cfg)
	fmt.Println("\nCPU µs per request (medians)")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\t"+strings.Join(cells.names, "\t")+"\t")
	for _, t := range targets[1:] {
		r.row(w, t.name, cells, func(k cellKey) string {
			v, ok := r.med(cellKey{t.name, k.stream, k.conc}, cpuUS)
			return cond(ok, fmt.Sprintf("%.1f", v))
		})
	}
	for _, q := range ratios {
		if !r.has(q.num) || !r.has(q.den) {
			continue
		}
		r.row(w, q.label, cells, func(k cellKey) string {
			a, ok1 := r.med(cellKey{q.num, k.stream, k.conc}, q.of)
			b, ok2 := r.med(cellKey{q.den, k.stream, k.conc}, q.of)
			return cond(ok1 && ok2 && a >= 0 && b > 0, fmt.Sprintf("%.2fx", a/b))
		})
	}
	w.Flush()
	r.printVerdicts(cfg)
}

// ratio is one line of the ratio table: num's figure over den's.
type ratio struct {
	label, num, den string
	of              func(round) float64
}

var ratios = []ratio{
	{"pistrad ÷ leanrelay (CPU)", "pistrad", "leanrelay", cpuUS},
	{"pistrad ÷ nginx (CPU)", "pistrad", "nginx", cpuUS},
	{"pistrad ÷ reverseproxy (CPU)", "pistrad", "reverseproxy", cpuUS},
	{"pistrad ÷ pistrad-bare (CPU)", "pistrad", "pistrad-bare", cpuUS},
	{"stdlib-client ÷ h1 (CPU)", "pistrad-stdlib", "pistrad", cpuUS},
	{"stdlib-client ÷ h1 (allocs)", "pistrad-stdlib", "pistrad", allocs},
	{"pistrad ÷ leanrelay (allocs)", "pistrad", "leanrelay", allocs},
	{"pistrad ÷ pistrad-base (CPU)", "pistrad", "pistrad-base", cpuUS},
	{"pistrad ÷ pistrad-base (allocs)", "pistrad", "pistrad-base", allocs},
}

// has reports whether the run measured the target.
func (r *results) has(name string) bool {
	for k := range r.cells {
		if k.target == name {
			return true
		}
	}
	return false
}

type heads struct {
	names []string
	keys  []cellKey
}

func (r *results) cellHeads(cfg config) heads {
	var h heads
	for _, stream := range []bool{false, true} {
		for _, conc := range cfg.conc {
			h.names = append(h.names, fmt.Sprintf("%s c=%d", cond(!stream, "JSON", "SSE"), conc))
			h.keys = append(h.keys, cellKey{"", stream, conc})
		}
	}
	return h
}

func (r *results) row(w *tabwriter.Writer, label string, h heads, val func(cellKey) string) {
	cols := []string{label}
	for _, k := range h.keys {
		cols = append(cols, val(k))
	}
	fmt.Fprintln(w, strings.Join(cols, "\t")+"\t")
}

// cond is s when ok, else the first of alt or "-".
func cond(ok bool, s string, alt ...string) string {
	if ok {
		return s
	}
	if len(alt) > 0 {
		return alt[0]
	}
	return "-"
}

// printVerdicts checks the limits: pistrad's CPU per request at or
// below the lean relay's at c=1 and c=16, and at most 150 µs added p50
// over direct at c=1. The verdict reads the medians; beside them, the
// spread of the ratio round by round says how far one run can be trusted.
func (r *results) printVerdicts(cfg config) {
	if !r.has("pistrad") || !r.has("leanrelay") {
		return
	}
	fmt.Println("\nissue 18's limits (pistrad, everything on)")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "cell\tCPU ÷ leanrelay\tper round\tlimit\tadded p50 µs (pistrad / leanrelay / nginx)\tlimit\tverdict\t")
	for _, stream := range []bool{false, true} {
		for _, conc := range []int{1, 16} {
			if !slices.Contains(cfg.conc, conc) {
				continue
			}
			p, ok1 := r.med(cellKey{"pistrad", stream, conc}, cpuUS)
			l, ok2 := r.med(cellKey{"leanrelay", stream, conc}, cpuUS)
			if !ok1 || !ok2 {
				continue
			}
			added := func(name string) (float64, bool) {
				v, ok := r.med(cellKey{name, stream, conc}, dur(func(x round) time.Duration { return x.addedP50 }))
				return v / float64(time.Microsecond), ok
			}
			pa, _ := added("pistrad")
			la, _ := added("leanrelay")
			na, nok := added("nginx")
			verdict, limit := "ok", "-"
			if p/l > 1.00 {
				verdict = "MISSED"
			}
			if conc == 1 {
				limit = "150"
				if pa > 150 {
					verdict = "MISSED"
				}
			}
			per := r.spread(cellKey{"pistrad", stream, conc}, cellKey{"leanrelay", stream, conc}, cpuUS)
			fmt.Fprintf(w, "%s c=%d\t%.2fx\t%s\t1.00x\t%.0f / %.0f / %s\t%s\t%s\t\n", cond(!stream, "JSON", "SSE"), conc,
				p/l, per, pa, la, cond(nok, fmt.Sprintf("%.0f", na)), limit, verdict)
		}
	}
	w.Flush()
}
