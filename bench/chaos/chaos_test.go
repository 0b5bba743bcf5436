package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChaosShort is the short chaos run `make test` includes: a few hundred
// requests against the failing fakes, pistrad built with the race
// detector, one kill -9 and restart per dialect. It fails on any hung
// request, empty reply, silently truncated stream, malformed error, corrupt
// answer, SDK verdict that contradicts the bytes, budget left held,
// pistrad goroutines not back to baseline, or a data race, panic or
// unclean stop of pistrad. The seed is the clock's unless
// PISTRA_CHAOS_SEED names one; a failure prints it, and
//
//	PISTRA_CHAOS_SEED=<seed> go test -run TestChaosShort ./bench/chaos
//
// or `go run ./bench/chaos -seed <seed> -requests 800 -concurrency 16 -rate 0.4 -timeout 250ms -hang 8s -race`
// repeats it.
func TestChaosShort(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PISTRA_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("PISTRA_CHAOS_SEED: %v", err)
		}
	}
	var out strings.Builder
	rep, err := run(config{
		requests: 800, concurrency: 16, duration: 30 * time.Second, seed: seed,
		rate: 0.4, timeout: 250 * time.Millisecond, hang: 8 * time.Second, pace: 2 * time.Millisecond, sdkShare: 0.25, abandonShare: 0.05,
		kill: true, race: true, settle: 10 * time.Second, slack: 5, out: &out,
	})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if f := rep.failures(); len(f) > 0 {
		t.Fatalf("seed %d: %s", seed, strings.Join(f, "; "))
	}
	if rep.sent != 800 {
		t.Errorf("%d of 800 requests sent within the run's bound", rep.sent)
	}
	// The run is only worth something if the faults happened and the
	// gateway recovered from many of them (a quarter leaves room for
	// timeouts when make test loads both cores).
	if sum(rep.injected) < 100 || rep.counts[served] < rep.sent/4 || rep.counts[cleanError] == 0 {
		t.Errorf("seed %d: %d faults injected, %d served, %d clean errors: the chaos did not bite", seed,
			sum(rep.injected), rep.counts[served], rep.counts[cleanError])
	}
}
