package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
)

// profileConc is the concurrency the profiles are taken at;
// profileMemRate pistrad's bytes per sampled allocation while profiled:
// fine enough to rank a cell's allocation sites by the thousand, coarse
// enough that sampling (a stack walk per sample) stays near 1% of the CPU
// profile taken beside it; at 4 KiB it was a tenth.
const (
	profileConc    = 16
	profileMemRate = 32 << 10
)

// profile captures, from pistrad's admin listener (behind its token), a
// CPU profile and an allocation profile (the allocations made over the
// same window) during one extra JSON and one extra SSE cell, outside the
// measured rounds: profiling costs the process CPU of its own.
func profile(cfg config, targets []*target) error {
	var p *target
	for _, t := range targets {
		if t.name == "pistrad" {
			p = t
		}
	}
	if p == nil {
		return errors.New("-profile needs the pistrad target")
	}
	if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
		return err
	}
	secs := max(5, int(cfg.duration.Round(time.Second)/time.Second))
	for _, stream := range []bool{false, true} {
		name := fmt.Sprintf("pistrad-%s-c%d", cond(!stream, "json", "sse"), profileConc)
		if err := profileCell(p, stream, secs, filepath.Join(cfg.profile, name)); err != nil {
			return fmt.Errorf("profile %s: %w", name, err)
		}
		fmt.Printf("profiles: go tool pprof -top -cum %[1]s.cpu.pprof; go tool pprof -top %[1]s.cpu.pprof; go tool pprof -top -sample_index=alloc_objects %[1]s.allocs.pprof\n",
			filepath.Join(cfg.profile, name))
	}
	return nil
}

// profileCell runs the load for secs and a bit, and takes both profiles
// over secs inside it.
func profileCell(t *target, stream bool, secs int, prefix string) error {
	done := make(chan sample, 1)
	go func() { done <- run(t, stream, profileConc, time.Duration(secs)*time.Second+time.Second) }()
	time.Sleep(250 * time.Millisecond) // the load is running at full concurrency
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, kind := range []string{"profile", "allocs"} {
		file := prefix + cond(kind == "profile", ".cpu.pprof", ".allocs.pprof")
		wg.Go(func() { errs[i] = fetchProfile(t.admin+"/debug/pprof/"+kind, secs, file) })
	}
	wg.Wait()
	if s := <-done; s.errors > 0 {
		errs = append(errs, fmt.Errorf("%d invalid responses while profiling, e.g. %v", s.errors, s.firstErr))
	}
	return errors.Join(errs...)
}

// fetchProfile saves the profile at url taken over secs, or as it stands
// when secs is 0.
func fetchProfile(url string, secs int, file string) error {
	if secs > 0 {
		url = fmt.Sprintf("%s?seconds=%d", url, secs)
	}
	body, err := proc.Get(url, adminToken, time.Duration(secs)*time.Second+30*time.Second)
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
