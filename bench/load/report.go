package main

import (
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// gateways are the targets measured against going direct.
var gateways = []string{"pistrad", "pistrad+budget", "pistrad+raft", "reverseproxy", "leanrelay"}

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
		rps:    float64(s.requests) / s.elapsed.Seconds(),
		p50:    percentile(s.lat, .50),
		p99:    percentile(s.lat, .99),
		ttfb50: percentile(s.ttfb, .50),
	}
	if s.requests > 0 {
		rd.cpuPerReq = s.cpu / time.Duration(s.requests)
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
		for _, t := range gateways {
			ck := cellKey{t, k.stream, k.conc}
			if rs := r.cells[ck]; len(rs) == n+1 {
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

func pick[T any](rs []round, f func(round) T) []T {
	out := make([]T, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }

// print writes the medians, then pistrad against the reverse proxy with
// the targets the issue sets.
func (r *results) print(cfg config, targets []*target) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "mode\tstream\tconc\treq/s\tp50 ms\tp99 ms\tadded p50 ms\tadded p99 ms\tTTFB p50 ms\tCPU µs/req\t\n")
	for _, stream := range []bool{false, true} {
		for _, conc := range cfg.conc {
			for _, t := range targets {
				rs := r.cells[cellKey{t.name, stream, conc}]
				added50, added99, cpu := "-", "-", "-"
				if t.name != "direct" {
					added50 = ms(median(pick(rs, func(x round) time.Duration { return x.addedP50 })))
					added99 = ms(median(pick(rs, func(x round) time.Duration { return x.addedP9 })))
					cpu = us(median(pick(rs, func(x round) time.Duration { return x.cpuPerReq })))
				}
				ttfb := "-"
				if stream {
					ttfb = ms(median(pick(rs, func(x round) time.Duration { return x.ttfb50 })))
				}
				fmt.Fprintf(w, "%s\t%v\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", t.name, stream, conc,
					median(pick(rs, func(x round) float64 { return x.rps })),
					ms(median(pick(rs, func(x round) time.Duration { return x.p50 }))),
					ms(median(pick(rs, func(x round) time.Duration { return x.p99 }))),
					added50, added99, ttfb, cpu)
			}
		}
	}
	w.Flush()
	r.printRatios(cfg)
}

func (r *results) printRatios(cfg config) {
	fmt.Println("\npistrad vs reverse proxy (targets: CPU/req <= 0.80x JSON, <= 0.90x streams; added p50 <= the proxy's)")
	r.printAgainst(cfg, "pistrad", "reverseproxy", 0.80, 0.90)
	fmt.Println("\npistrad vs lean relay, every feature on (target: CPU/req <= 1.00x; added p50 <= the relay's)")
	r.printAgainst(cfg, "pistrad", "leanrelay", 1.00, 1.00)
	fmt.Println("\npistrad with a budget on every request vs none (target: CPU/req <= 1.05x)")
	r.printAgainst(cfg, "pistrad+budget", "pistrad", 1.05, 1.05)
	// A request reads and holds on the node's own buckets either way; the
	// ledger is written by the flush every 500 ms, not per request.
	fmt.Println("\npistrad with a budget on the raft ledger vs in memory (expected: CPU/req <= 1.05x)")
	r.printAgainst(cfg, "pistrad+raft", "pistrad+budget", 1.05, 1.05)
	r.printRPS(cfg, "pistrad+raft", "pistrad+budget")
}

// printRPS sets target's requests per second beside base's, cell by cell.
func (r *results) printRPS(cfg config, target, base string) {
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "stream\tconc\treq/s (%s / %s)\tratio\t\n", target, base)
	for _, stream := range []bool{false, true} {
		for _, conc := range cfg.conc {
			t := median(pick(r.cells[cellKey{target, stream, conc}], func(x round) float64 { return x.rps }))
			b := median(pick(r.cells[cellKey{base, stream, conc}], func(x round) float64 { return x.rps }))
			fmt.Fprintf(w, "%v\t%d\t%.0f / %.0f\t%.2fx\t\n", stream, conc, t, b, t/max(b, 1))
		}
	}
	w.Flush()
}

// printAgainst compares target's CPU per request and added latency with
// base's, cell by cell, against the JSON and stream limits.
func (r *results) printAgainst(cfg config, target, base string, jsonLimit, streamLimit float64) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "stream\tconc\tCPU ratio\ttarget\tadded p50 ms (%s / %s)\tverdict\t\n", target, base)
	for _, stream := range []bool{false, true} {
		limit := jsonLimit
		if stream {
			limit = streamLimit
		}
		for _, conc := range cfg.conc {
			p, b := r.cells[cellKey{target, stream, conc}], r.cells[cellKey{base, stream, conc}]
			pc := median(pick(p, func(x round) time.Duration { return x.cpuPerReq }))
			bc := median(pick(b, func(x round) time.Duration { return x.cpuPerReq }))
			pa := median(pick(p, func(x round) time.Duration { return x.addedP50 }))
			ba := median(pick(b, func(x round) time.Duration { return x.addedP50 }))
			ratio := float64(pc) / float64(max(bc, 1))
			verdict := "ok"
			if ratio > limit || pa > ba {
				verdict = "MISSED"
			}
			fmt.Fprintf(w, "%v\t%d\t%.2fx\t%.2fx\t%s / %s\t%s\t\n", stream, conc, ratio, limit, ms(pa), ms(ba), verdict)
		}
	}
	w.Flush()
}
